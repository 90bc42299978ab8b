/**
 * The redaction rules behind `redactSecrets`: secretlint's recommended rule set (vendor token
 * formats, maintained upstream) driven through a minimal in-memory context, plus our own rules for
 * what a linter does not cover but an egress scrubber must: whole assignment values, credentials in
 * URLs, Authorization headers, CLI flags, and token formats the set does not ship or matches only
 * in their exact current length.
 *
 * Every rule declares literal cues: substrings that every match of the rule contains. One scan of
 * the text for the cues' anchor characters decides which rules run, so ordinary prose pays for that
 * scan and, at most, the few rules keyed on common punctuation.
 */
import { rules as secretlintPresetRules } from "@secretlint/secretlint-rule-preset-recommend";

/** What a redacted secret is replaced with. */
export const REDACTED = "[redacted]";

/** The rule set we depend on (exact pin in package.json; a test checks the installed version). */
export const SECRET_RULE_SET = {
  name: "@secretlint/secretlint-rule-preset-recommend",
  version: "12.0.0",
  license: "MIT",
} as const;

/**
 * A cue is a literal every match of the rule contains, matched exactly (case-sensitively). Rules
 * whose pattern needs an assignment (`:`/`=`) or a flag (`-`) use that character as their cue: the
 * rule itself then decides.
 */
type Cue = string;

interface Rule {
  id: string;
  cues: readonly Cue[];
  /**
   * Returns the text with this rule's secrets replaced (the same string when nothing matched),
   * and adds each secret value it replaced to `found` when given.
   */
  apply(text: string, found?: string[]): string;
}

// ---------------------------------------------------------------------------------------------
// Helpers

/**
 * The secret a rule removed when it replaced `match` with `replacement`: what is left of the match
 * once the text the replacement keeps around the marker (a name, a scheme, quotes) is taken off.
 */
function removedSecret(match: string, replacement: string): string {
  const at = replacement.indexOf(REDACTED);
  if (at < 0) return "";
  const keptBefore = replacement.slice(0, at);
  const keptAfter = replacement.slice(at + REDACTED.length);
  let start = 0;
  while (start < keptBefore.length && start < match.length && keptBefore[start] === match[start]) start++;
  let end = match.length;
  let back = keptAfter.length;
  while (back > 0 && end > start && keptAfter[back - 1] === match[end - 1]) {
    back--;
    end--;
  }
  return match.slice(start, end).trim();
}

function record(found: string[] | undefined, match: string, replacement: string): void {
  if (found === undefined || replacement === match) return;
  const secret = removedSecret(match, replacement);
  if (secret !== "") found.push(secret);
}

function regexRule(
  id: string,
  cues: readonly Cue[],
  pattern: RegExp,
  replace: string | ((match: string, ...groups: string[]) => string) = REDACTED,
): Rule {
  return {
    id,
    cues,
    apply(text, found) {
      pattern.lastIndex = 0;
      return text.replace(pattern, (match: string, ...args: string[]) => {
        const out = typeof replace === "string" ? replace : replace(match, ...args);
        record(found, match, out);
        return out;
      });
    },
  };
}

/** Replace the given [start, end) spans (unordered, possibly overlapping) with REDACTED; each replaced text goes to `found`. */
function redactSpans(text: string, spans: Array<[number, number]>, found?: string[]): string {
  if (spans.length === 0) return text;
  spans.sort((a, b) => a[0] - b[0] || b[1] - a[1]);
  let out = "";
  let pos = 0;
  let open = -1;
  let close = -1;
  for (const [start, end] of spans) {
    if (end <= start) continue;
    if (open >= 0 && start <= close) {
      close = Math.max(close, end);
      continue;
    }
    if (open >= 0) {
      out += text.slice(pos, open) + REDACTED;
      found?.push(text.slice(open, close));
      pos = close;
    }
    open = start;
    close = end;
  }
  if (open >= 0) {
    out += text.slice(pos, open) + REDACTED;
    found?.push(text.slice(open, close));
    pos = close;
  }
  return out + text.slice(pos);
}

/**
 * A rule run as an exec loop: `edit` returns the replacement for a match, or undefined to keep it.
 * Patterns start with their literal part (no leading lookbehind), so the regex engine can skip
 * ahead to candidates; the boundary before a match is checked here instead.
 */
function scanRule(
  id: string,
  cues: readonly Cue[],
  pattern: RegExp,
  edit: (m: RegExpExecArray, text: string) => string | undefined,
  okBefore: (text: string, index: number) => boolean = () => true,
): Rule {
  return {
    id,
    cues,
    apply(text, found) {
      pattern.lastIndex = 0;
      let out = "";
      let pos = 0;
      for (let m = pattern.exec(text); m !== null; m = pattern.exec(text)) {
        if (m[0].length === 0) {
          pattern.lastIndex = m.index + 1;
          continue;
        }
        if (!okBefore(text, m.index)) {
          pattern.lastIndex = m.index + 1;
          continue;
        }
        const next = edit(m, text);
        if (next === undefined) continue;
        record(found, m[0], next);
        out += text.slice(pos, m.index) + next;
        pos = m.index + m[0].length;
      }
      return pos === 0 ? text : out + text.slice(pos);
    },
  };
}

const WORD_CHAR = /[A-Za-z0-9_]/;
/** True when the match at `index` starts a token (not preceded by a word character). */
const tokenStart = (text: string, index: number): boolean => index === 0 || !WORD_CHAR.test(text[index - 1] as string);

// ---------------------------------------------------------------------------------------------
// Our own structural rules (run first: they keep names and hosts readable)

/**
 * PEM private key blocks (RSA, EC, DSA, OPENSSH, ENCRYPTED, PGP, PKCS#8). A terminated block goes
 * whole; a block pasted without its END line goes up to the end of its base64 body. Implemented
 * with indexOf rather than one lazy regex so hostile input (many BEGIN lines, no END) stays linear.
 */
const PEM_BEGIN = /-----BEGIN ([A-Z0-9 ]{0,40})PRIVATE KEY( BLOCK)?-----/g;
const PEM_BODY = /[A-Za-z0-9+/=\s\\:,.-]*/y;
const PEM_WINDOW = 64 * 1024;
const pemRule: Rule = {
  id: "pem-private-key",
  cues: ["PRIVATE KEY"],
  apply(text, found) {
    const spans: Array<[number, number]> = [];
    let endAt = -2;
    PEM_BEGIN.lastIndex = 0;
    for (let m = PEM_BEGIN.exec(text); m !== null; m = PEM_BEGIN.exec(text)) {
      const bodyStart = m.index + m[0].length;
      if (endAt !== -1 && endAt < bodyStart) endAt = text.indexOf("-----END ", bodyStart);
      let stop = -1;
      if (endAt >= 0 && endAt - bodyStart <= PEM_WINDOW) {
        const footerEnd = text.indexOf("-----", endAt + 9);
        if (footerEnd >= 0 && footerEnd - endAt <= 64) stop = footerEnd + 5;
      }
      if (stop < 0) {
        PEM_BODY.lastIndex = bodyStart;
        PEM_BODY.test(text);
        stop = Math.min(PEM_BODY.lastIndex, bodyStart + PEM_WINDOW);
      }
      spans.push([m.index, stop]);
      PEM_BEGIN.lastIndex = Math.max(stop, PEM_BEGIN.lastIndex);
    }
    return redactSpans(text, spans, found);
  },
};

/** PuTTY private key files: everything from `Private-Lines:` through the MAC line. */
const puttyRule = regexRule(
  "putty-private-key",
  ["Private-Lines:"],
  /Private-Lines:\s*\d{1,4}\r?\n(?:[A-Za-z0-9+/=]{1,128}\r?\n){0,400}(?:Private-MAC:\s*[0-9a-fA-F]{0,128})?/g,
);

/**
 * URLs carrying credentials: scheme://user:password@host → scheme://[redacted]@host. The password
 * may contain unescaped `@ : /` (people paste them that way): the userinfo runs to the LAST `@` of
 * the URL that is followed by a host. A scan, not a regex, so it stays linear on hostile input: each
 * URL is looked at up to its end, the next `://`, or USERINFO_MAX characters.
 */
const USERINFO_MAX = 768;
const SCHEME_CHAR = /[a-zA-Z0-9+.-]/;
const URL_STOP = /[\s'"<>`]/;
const HOST_START = /[A-Za-z0-9[]/;
const urlCredentialsRule: Rule = {
  id: "url-credentials",
  cues: ["://"],
  apply(text, found) {
    const spans: Array<[number, number]> = [];
    let nextAt = -2;
    for (let sep = text.indexOf("://"); sep >= 0;) {
      const following = text.indexOf("://", sep + 3);
      const userStart = sep + 3;
      if (nextAt !== -1 && nextAt < userStart) nextAt = text.indexOf("@", userStart);
      if (nextAt === -1) break;
      let schemeStart = sep;
      while (schemeStart > 0 && sep - schemeStart < 31 && SCHEME_CHAR.test(text[schemeStart - 1] as string)) schemeStart--;
      const schemeOk = schemeStart < sep && /[a-zA-Z]/.test(text[schemeStart] as string);
      const limit = Math.min(text.length, userStart + USERINFO_MAX, following < 0 ? text.length : following);
      if (schemeOk && nextAt < limit) {
        let colon = -1;
        let lastAt = -1;
        for (let i = userStart; i < limit; i++) {
          const ch = text[i] as string;
          if (URL_STOP.test(ch)) break;
          if (colon < 0) {
            if (ch === ":") colon = i;
            else if (ch === "/" || ch === "?" || ch === "#" || ch === "@") break;
          } else if (ch === "@" && HOST_START.test(text[i + 1] ?? "")) lastAt = i;
        }
        if (colon >= 0 && lastAt > colon) spans.push([userStart, lastAt]);
      }
      sep = following;
    }
    return redactSpans(text, spans, found);
  },
};

/**
 * HTTP Authorization / Proxy-Authorization values (Basic, Bearer, Digest, token …): the scheme name
 * stays, everything after it up to the end of the header value goes.
 */
const authorizationHeaderRule = regexRule(
  "authorization-header",
  [":", "="],
  /\b((?:proxy-)?authorization\\?["']?\s*[:=]\s*\\?["']?\s*)(?:(basic|bearer|token|digest|negotiate|ntlm|bot|apikey|sso-key|aws4-hmac-sha256)\s+)?([^\s"'\\\r\n][^"'\\\r\n]{0,4095})/gi,
  (_m, prefix: string, scheme: string | undefined) => `${prefix}${scheme ? `${scheme} ` : ""}${REDACTED}`,
);

// ---------------------------------------------------------------------------------------------
// The maintained rule set: secretlint's recommended preset, driven in memory

interface LintSource {
  content: string;
  filePath?: string;
  ext: string;
  contentType: "text";
}
interface LintMessage {
  props?: Record<string, unknown>;
}
interface LintReport {
  message?: LintMessage | string;
  range?: readonly [number, number];
}
interface LintHandler {
  file?: (source: LintSource) => unknown;
}
interface LintRuleCreator {
  meta: { id: string };
  create(context: unknown, options: Record<string, unknown>): LintHandler;
}

/**
 * Literal cues per secretlint rule, read off each rule's patterns. A rule of the set with no entry
 * here runs on every text that reaches the rules (never silently skipped); a test fails when the
 * pinned set gains a rule without cues, and checks every cue against the rule's detections.
 */
const SET_RULE_CUES: Record<string, readonly Cue[]> = {
  // Its pattern spells the word out in exactly these three cases.
  "@secretlint/secretlint-rule-aws": ["SECRET", "secret", "Secret"],
  "@secretlint/secretlint-rule-privatekey": ["PRIVATE KEY"],
  "@secretlint/secretlint-rule-npm": ["npm_"],
  // Both report a URL only when it carries `user:password@`.
  "@secretlint/secretlint-rule-basicauth": ["@"],
  "@secretlint/secretlint-rule-slack": ["xoxb-", "xoxp-", "xapp-", "xoxa-", "xoxo-", "xoxr-", "://"],
  "@secretlint/secretlint-rule-sendgrid": ["SG."],
  "@secretlint/secretlint-rule-shopify": ["shppa_", "shpca_", "shpat_", "shpss_"],
  "@secretlint/secretlint-rule-stripe": ["sk_live_", "sk_test_", "rk_live_", "rk_test_"],
  "@secretlint/secretlint-rule-github": ["ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"],
  "@secretlint/secretlint-rule-gitlab": ["glpat-"],
  "@secretlint/secretlint-rule-grafana": ["glc_", "glsa_"],
  "@secretlint/secretlint-rule-openai": ["T3BlbkFJ"],
  "@secretlint/secretlint-rule-anthropic": ["sk-ant-api0"],
  "@secretlint/secretlint-rule-groq": ["gsk_"],
  "@secretlint/secretlint-rule-huggingface": ["hf_"],
  "@secretlint/secretlint-rule-linear": ["lin_api_"],
  "@secretlint/secretlint-rule-notion": ["ntn_"],
  "@secretlint/secretlint-rule-1password": ["ops_ey"],
  "@secretlint/secretlint-rule-database-connection-string": ["@"],
  "@secretlint/secretlint-rule-hashicorp-vault": ["hvs.", "hvb.", "hvr."],
  "@secretlint/secretlint-rule-vercel": ["vcp_", "vci_", "vca_", "vcr_", "vck_"],
  "@secretlint/secretlint-rule-databricks": ["dapi"],
  "@secretlint/secretlint-rule-docker": ["dckr_pat_"],
  "@secretlint/secretlint-rule-figma": ["figd_"],
  "@secretlint/secretlint-rule-cloudflare": ["cfk_", "cfut_", "cfat_"],
  "@secretlint/secretlint-rule-tailscale": ["tskey-"],
};

/** Rules of the set that are not run, and why. */
export const SKIPPED_SET_RULES: Readonly<Record<string, string>> = {
  // Reads a `.p12` file from disk or a whole `.json` file by file name; we scrub strings, not files
  // (the private key inside such JSON is caught by the PEM rule).
  "@secretlint/secretlint-rule-gcp": "file-based (reads .p12/.json files by path)",
  // Honours `secretlint-disable` comments: text being scrubbed must never be able to switch
  // scrubbing off.
  "@secretlint/secretlint-rule-filter-comments": "directive comments would let input disable redaction",
};

const TOKEN_HEAD = /[A-Za-z0-9_-]/;
const TOKEN_TAIL = /[A-Za-z0-9_\-+/=]/;

/** Report props that carry the secret itself (as opposed to file names or token types). */
const SECRET_PROPS = new Set(["TOKEN", "KEY", "ID", "URI", "URL", "CREDENTIAL"]);

let lintReports: LintReport[] = [];
const lintContext = {
  // Messages are kept structured so the reported secret (props) can be redacted exactly, even for
  // rules whose `range` marks where the match started rather than where the secret is.
  createTranslator: () => (messageId: string, props?: Record<string, unknown>) => ({ messageId, props }),
  report: (report: LintReport) => void lintReports.push(report),
  ignore: () => undefined,
  registerRule: () => undefined,
  sharedOptions: {},
};

function setRule(creator: LintRuleCreator, handler: LintHandler & { file: (s: LintSource) => unknown }): Rule {
  const id = creator.meta.id;
  return {
    id,
    cues: SET_RULE_CUES[id] ?? [],
    apply(text, found) {
      lintReports = [];
      try {
        const pending = handler.file({ content: text, ext: "", contentType: "text" });
        // A rule answering asynchronously cannot take part in a synchronous scrub; its later
        // reports are dropped (none of the compiled rules does so for plain text; a test checks).
        if (pending instanceof Promise) pending.catch(() => undefined);
      } catch {
        lintReports = [];
      }
      const reports = lintReports;
      lintReports = [];
      if (reports.length === 0) return text;
      const spans: Array<[number, number]> = [];
      for (const report of reports) {
        const props = typeof report.message === "object" && report.message !== null ? report.message.props : undefined;
        let found = false;
        for (const [name, value] of Object.entries(props ?? {})) {
          if (!SECRET_PROPS.has(name) || typeof value !== "string" || value.length < 4) continue;
          for (let at = text.indexOf(value); at >= 0; at = text.indexOf(value, at + value.length)) {
            spans.push([at, at + value.length]);
            found = true;
          }
        }
        if (!found && report.range) spans.push([report.range[0], report.range[1]]);
      }
      // A match that stops inside a longer token (a length cap in the rule's pattern) takes the
      // whole token: the rest of it is the same secret.
      for (const span of spans) {
        while (span[0] > 0 && TOKEN_HEAD.test(text[span[0] - 1] as string)) span[0]--;
        while (span[1] < text.length && TOKEN_TAIL.test(text[span[1]] as string)) span[1]++;
      }
      return redactSpans(text, spans, found);
    },
  };
}

export interface SecretRuleSetStatus {
  name: string;
  version: string;
  license: string;
  compiled: string[];
  skipped: Array<{ id: string; reason: string }>;
  /** Compiled rules that have no cue entry and therefore run on every text reaching the rules. */
  withoutCues: string[];
}

let setRules: Rule[] | undefined;
let setStatus: SecretRuleSetStatus | undefined;

/** Instantiate the set's rules once, on first use. */
function loadSetRules(): Rule[] {
  if (setRules) return setRules;
  const compiled: Rule[] = [];
  const status: SecretRuleSetStatus = { ...SECRET_RULE_SET, compiled: [], skipped: [], withoutCues: [] };
  for (const creator of secretlintPresetRules as unknown as LintRuleCreator[]) {
    const id = creator.meta.id;
    const skipReason = SKIPPED_SET_RULES[id];
    if (skipReason !== undefined) {
      status.skipped.push({ id, reason: skipReason });
      continue;
    }
    try {
      const handler = creator.create(lintContext, {});
      if (typeof handler.file !== "function") {
        status.skipped.push({ id, reason: "has no text handler" });
        continue;
      }
      compiled.push(setRule(creator, handler as LintHandler & { file: (s: LintSource) => unknown }));
      status.compiled.push(id);
      if (SET_RULE_CUES[id] === undefined) status.withoutCues.push(id);
    } catch (error) {
      status.skipped.push({ id, reason: `failed to load: ${error instanceof Error ? error.message : String(error)}` });
    }
  }
  setRules = compiled;
  setStatus = status;
  return compiled;
}

/** Which rules of the set were compiled and which were skipped (and why). */
export function secretRuleSetStatus(): SecretRuleSetStatus {
  loadSetRules();
  return setStatus as SecretRuleSetStatus;
}

// ---------------------------------------------------------------------------------------------
// Our own token formats: families the set does not ship, and looser fallbacks where the set only
// accepts the exact current length or skips documentation examples (a scrubber errs on the side
// of redacting).

const E = "(?![A-Za-z0-9_])"; // token end
const tok = (id: string, cues: readonly Cue[], body: string, okBefore = tokenStart): Rule =>
  scanRule(id, cues, new RegExp(body, "g"), () => REDACTED, okBefore);

const TOKEN_RULES: Rule[] = [
  tok("aws-access-key-id", ["AKIA", "ASIA", "ABIA", "ACCA", "A3T"], `(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}(?![A-Za-z0-9])`),
  tok("google-api-key", ["AIza"], `AIza[0-9A-Za-z_-]{35}`),
  tok("google-oauth-client-secret", ["GOCSPX-"], `GOCSPX-[0-9A-Za-z_-]{28}`),
  tok("google-oauth-access-token", ["ya29."], `ya29\\.[0-9A-Za-z_-]{20,2048}`),
  tok("github-token", ["ghp_", "gho_", "ghu_", "ghs_", "ghr_"], `gh[pousr]_[A-Za-z0-9_]{20,255}`),
  tok("github-fine-grained-pat", ["github_pat_"], `github_pat_[A-Za-z0-9_]{20,255}`),
  tok(
    "gitlab-token",
    ["glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "glimt-", "glagent-", "gloas-", "glsoat-", "glffct-", "glft-", "glwt-", "GR1348941"],
    `(?:gl(?:pat|dt|rt|ptt|cbt|imt|agent|oas|soat|ffct|ft|wt)-[0-9A-Za-z_-]{20,255}|GR1348941[0-9A-Za-z_-]{20,64})`,
  ),
  tok("npm-token", ["npm_"], `npm_[A-Za-z0-9]{30,64}${E}`),
  tok("pypi-token", ["pypi-AgEIcHlwaS5vcmc"], `pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{20,1024}`),
  tok("huggingface-token", ["hf_", "api_org_"], `(?:hf_[A-Za-z0-9]{30,64}|api_org_[A-Za-z0-9]{30,64})${E}`),
  tok("openai-anthropic-key", ["sk-"], `sk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,255}`),
  tok("slack-token", ["xox", "xapp-"], `(?:xox[abposer]|xapp)-[A-Za-z0-9-]{10,255}`),
  tok(
    "stripe-key",
    ["sk_live_", "sk_test_", "rk_live_", "rk_test_", "whsec_"],
    `(?:[sr]k_(?:live|test)_[0-9A-Za-z]{16,255}|whsec_[0-9A-Za-z+/=]{24,128})`,
  ),
  tok("twilio-api-key", ["SK"], `SK[0-9a-fA-F]{32}${E}`),
  tok("sendgrid-key", ["SG."], `SG\\.[A-Za-z0-9_-]{16,64}\\.[A-Za-z0-9_-]{16,64}`),
  tok("mailgun-key", ["key-"], `key-[0-9a-f]{32}${E}`),
  tok("mailchimp-key", ["-us"], `[0-9a-f]{32}-us[0-9]{1,2}${E}`),
  // Discord bot tokens have no literal prefix; they are looked for where the text talks about a
  // bot, Discord or a token.
  tok("discord-bot-token", ["."], `[MNO][A-Za-z0-9_-]{23,27}\\.[A-Za-z0-9_-]{6}\\.[A-Za-z0-9_-]{27,40}${E}`),
  tok("discord-webhook", ["/api/webhooks/"], `(?:discord(?:app)?\\.com/api/webhooks/[0-9]{5,30}/)[A-Za-z0-9_-]{40,100}`),
  // Telegram puts the token right after `/bot` in API URLs.
  tok("telegram-bot-token", [":AA"], `[0-9]{5,16}:AA[A-Za-z0-9_-]{32,40}${E}`, (text, i) => tokenStart(text, i) || text.endsWith("bot", i)),
  tok("jwt", ["eyJ"], `eyJ[A-Za-z0-9_-]{8,4096}\\.[A-Za-z0-9_-]{8,8192}\\.[A-Za-z0-9_-]{8,4096}`),
  tok("shopify-token", ["shppa_", "shpca_", "shpat_", "shpss_"], `shp(?:pa|ca|at|ss)_[A-Za-z0-9]{24,64}${E}`),
  tok("digitalocean-token", ["_v1_"], `do[opr]_v1_[a-f0-9]{64}${E}`),
  tok("square-token", ["sq0atp-", "sq0csp-", "EAAA"], `(?:sq0(?:atp|csp)-[0-9A-Za-z_-]{22,64}|EAAA[0-9A-Za-z_-]{60,64}${E})`),
  tok("postman-key", ["PMAK-"], `PMAK-[a-f0-9]{24}-[a-f0-9]{34}`),
  tok("atlassian-token", ["ATATT3"], `ATATT3[A-Za-z0-9_=-]{20,512}`),
  tok("age-secret-key", ["AGE-SECRET-KEY-1"], `AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}`),
  tok("sentry-token", ["sntrys_", "sntryu_"], `sntr[ysu]_[A-Za-z0-9+/=_-]{20,512}`),
  tok("newrelic-key", ["NRAK-"], `NRAK-[A-Z0-9]{27}`),
  tok("azure-ad-client-secret", ["Q~"], `[A-Za-z0-9_~.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])`),
  tok("doppler-token", ["dp."], `dp\\.(?:pt|st|sa|ct|scim|audit)\\.[A-Za-z0-9]{40,64}`),
  tok("supabase-token", ["sbp_"], `sbp_[a-f0-9]{40}${E}`),
  tok("heroku-token", ["HRKU-"], `HRKU-[A-Za-z0-9_-]{20,128}`),
  tok("vault-token", ["hvs.", "hvb."], `hv[sb]\\.[A-Za-z0-9_-]{24,512}`),
  tok("notion-legacy-token", ["secret_"], `secret_[A-Za-z0-9]{43}${E}`),
  tok("firebase-fcm-key", [":APA91b"], `AAAA[A-Za-z0-9_-]{7}:APA91b[A-Za-z0-9_-]{100,200}`),
];

// ---------------------------------------------------------------------------------------------
// Generic rules (last): flags, query parameters and assignments

// Words a secret-bearing name ENDS with, so `max_tokens: 1000`, `tokens_used=5` and
// `password_policy: strict` are left alone while `GITHUB_TOKEN=...` and `db_password: x` are caught.
// The words of a name may be joined by `_`, `-`, `.`, one or two spaces, or nothing (`apiKey`):
// people write `api key = ...` as often as `API_KEY=...`.
const JOIN = "(?:[_.-]| {1,2})?";
const SECRET_WORD = `(?:api${JOIN}key|secret(?:${JOIN}key)?|token|passw(?:or)?d|pwd|passphrase|credentials?|(?:private|account|signing|encryption|master|shared${JOIN}access)${JOIN}key|access${JOIN}key(?:${JOIN}id)?|connection${JOIN}string)`;
/** What joins a secret name to its value: `=`, `:`, `=>` or `:=`, with any spacing. */
const ASSIGN = "\\s{0,16}(?:=>|:=|[:=])\\s{0,16}";
const SECRET_NAME = `[A-Za-z0-9_.-]{0,40}?${SECRET_WORD}`;
// A name that holds a password-like value even when it is all digits (a PIN, `password: 123456`).
const PASSWORD_NAME = /passw|pwd|passphrase|secret|credential|pin$/i;

// Values that are obviously not secrets (flags, placeholders, references) are kept so the scrub
// does not destroy ordinary configuration text.
const NON_SECRET_VALUE =
  /^(?:true|false|null|none|nil|undefined|yes|no|on|off|required|optional|\[redacted\]|\*+|x+|\.\.\.|<[^<>]*>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{[^{}]*\}\}|%[A-Za-z_][A-Za-z0-9_]*%)$/i;
const NUMBER = /^-?\d{1,12}(?:\.\d{1,6})?$/;

function isNonSecret(name: string, value: string): boolean {
  if (value.length === 0 || value.startsWith(REDACTED)) return true;
  if (NON_SECRET_VALUE.test(value)) return true;
  return NUMBER.test(value) && !PASSWORD_NAME.test(name);
}

/** The identifier that ends at `end` (a secret word's start): its start index. */
function nameStart(text: string, end: number): number {
  let i = end;
  while (i > 0 && /[A-Za-z0-9_.-]/.test(text[i - 1] as string)) i--;
  return i;
}

/** `--password hunter2`, `--api-key=…`, `--db-password 's3 cret'`: the flag stays, the value goes. */
const CLI_FLAG_WORD = "(?:password|passwd|passphrase|secret|token|api-?key|access-?key|private-?key|auth|credentials?)";
const cliFlagRule = scanRule(
  "cli-secret-flag",
  ["-"],
  new RegExp(
    `--?[A-Za-z0-9_-]{0,40}?${CLI_FLAG_WORD}(?![A-Za-z0-9_-])(\\s+|=)(?!-)("[^"\\r\\n]{0,4096}"|'[^'\\r\\n]{0,4096}'|[^\\s"'][^\\s]{0,4095})`,
    "gi",
  ),
  (m) => {
    const [match, sep, value] = m as unknown as [string, string, string];
    const flag = match.slice(0, match.length - sep.length - value.length);
    const bare = value.replace(/^["']|["']$/g, "");
    if (isNonSecret(flag, bare)) return undefined;
    const quote = value.startsWith('"') || value.startsWith("'") ? (value[0] as string) : "";
    return `${flag}${sep}${quote}${REDACTED}${quote}`;
  },
  (text, i) => i === 0 || !/[\w-]/.test(text[i - 1] as string),
);

/** Secret query parameters: `?access_token=…&`, Azure SAS `sig=`, AWS/GCS presigned signatures. */
const queryParamRule = regexRule(
  "query-secret-param",
  ["="],
  new RegExp(`([?&](?:sig|signature|x-amz-signature|x-amz-security-token|x-goog-signature|${SECRET_NAME})=)([^&#\\s"'<>\`]{1,4096})`, "gi"),
  (match: string, prefix: string, value: string) => (isNonSecret(prefix, value) ? match : `${prefix}${REDACTED}`),
);

/**
 * `"api_key": "value"`, `'password': 'v'`, `KEY=value`, `key: value`, `key="value"` (JSON, env
 * files, YAML, connection strings) and JSON encoded twice (`\"token\": \"v\"`). The name stays;
 * the WHOLE value goes: a quoted value to its closing quote, a JSON scalar (number/true/false/null)
 * alone, an unquoted value to the end of the line — a password may contain `& ; , )` and spaces,
 * so no shorter stop is safe. The regex starts at the secret word (cheap to find); the rest of the
 * name is read backwards from there.
 */
const assignmentRule = scanRule(
  "secret-assignment",
  [":", "="],
  new RegExp(
    `${SECRET_WORD}(?![A-Za-z0-9])\\\\?["'\`]?${ASSIGN}` +
      `(?:\\\\"((?:[^"\\\\\\r\\n]|\\\\[^"\\r\\n]){0,4096})\\\\"|"((?:[^"\\\\\\r\\n]|\\\\.){0,4096})"|'([^'\\r\\n]{0,4096})'|\`([^\`\\r\\n]{0,4096})\`` +
      `|(-?\\d{1,12}(?:\\.\\d{1,6})?|true|false|null)(?=\\s{0,16}(?:[,}\\]]|$))` +
      // An object or array under a secret name is not itself the value: its fields are judged
      // one by one, and the rest of a one-line JSON document must survive.
      `|(?!\\{["\\s}]|\\[["\\s[{\\]])([^\\s"'\`\\\\][^\\r\\n]{0,4095}))`,
    "gim",
  ),
  (m, text) => {
    const [match, escaped, dq, sq, bt, scalar, bare] = m as unknown as [string, ...Array<string | undefined>];
    const start = nameStart(text, m.index);
    const name = text.slice(start, m.index) + match;
    // Query parameters are the query rule's (their value ends at `&`).
    const before = text[start - 1];
    const quoted = before === '"' || before === "'" || before === "`" || before === "\\";
    const lead = quoted ? text[start - 2] : before;
    if (lead === "?" || lead === "&") return undefined;
    let valueLength = 0;
    let open = "";
    let close = "";
    let value = "";
    if (escaped !== undefined) [value, open, close, valueLength] = [escaped, '\\"', '\\"', escaped.length + 4];
    else if (dq !== undefined) [value, open, close, valueLength] = [dq, '"', '"', dq.length + 2];
    else if (sq !== undefined) [value, open, close, valueLength] = [sq, "'", "'", sq.length + 2];
    else if (bt !== undefined) [value, open, close, valueLength] = [bt, "`", "`", bt.length + 2];
    else if (scalar !== undefined) [value, valueLength] = [scalar, scalar.length];
    else {
      const raw = bare ?? "";
      value = raw.trimEnd();
      valueLength = raw.length;
      close = raw.slice(value.length);
      // Inside a markdown code span the value ends at the closing backtick.
      const tick = before === "`" ? value.indexOf("`") : -1;
      if (tick >= 0) {
        close = raw.slice(tick);
        value = value.slice(0, tick);
      }
    }
    if (isNonSecret(name, value)) return undefined;
    return `${match.slice(0, match.length - valueLength)}${open}${REDACTED}${close}`;
  },
);

/** A bare `Bearer <token>` outside a header (logs, curl lines). */
const bearerRule = regexRule(
  "bearer-token",
  ["Bearer", "BEARER"],
  /\b(Bearer|BEARER)\s+[A-Za-z0-9\-._~+/]{8,4096}=*/g,
  (_m, word: string) => `${word} ${REDACTED}`,
);

/** A bare `Basic <base64>` whose base64 decodes to `user:password`. */
const basicRule = regexRule(
  "basic-credentials",
  ["Basic", "BASIC"],
  /\b(Basic|BASIC)\s+([A-Za-z0-9+/]{6,4096}={0,2})(?![A-Za-z0-9+/=])/g,
  (match: string, word: string, b64: string) => {
    const decoded = Buffer.from(b64, "base64").toString("latin1");
    return /^[\x20-\x7e]{1,1024}:[\x20-\x7e]{0,2048}$/.test(decoded) ? `${word} ${REDACTED}` : match;
  },
);

// ---------------------------------------------------------------------------------------------
// Ordering and the cue index

let allRules: Rule[] | undefined;

/** Ordered: structural rules first, then the set, our token formats, and generic rules last. */
export function redactionRules(): Rule[] {
  allRules ??= [
    pemRule,
    puttyRule,
    urlCredentialsRule,
    authorizationHeaderRule,
    ...loadSetRules(),
    ...TOKEN_RULES,
    cliFlagRule,
    queryParamRule,
    assignmentRule,
    bearerRule,
    basicRule,
  ];
  return allRules;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/-]/g, "\\$&");
}

/**
 * Characters a cue is anchored on, rarest in ordinary prose first. Every cue holding one of them
 * is found by looking only where that character occurs; a cue of lower-case letters only is
 * searched as a whole word.
 */
const ANCHOR_PREFERENCE = "_~=@:/.-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";

interface AnchoredCue {
  cue: string;
  /** Position of the anchor character inside the cue. */
  offset: number;
  rules: number[];
}

interface CueIndex {
  /** Finds anchor characters (global; used with `test`, so no match objects are allocated). */
  anchors: RegExp | undefined;
  byAnchor: Map<string, AnchoredCue[]>;
  /** Cues of lower-case letters only, looked for as whole words with `includes`. */
  byWord: Array<[string, number[]]>;
  rules: Rule[];
  /** Rules that run whatever the text (no cues declared). */
  always: number[];
}

let cueIndex: CueIndex | undefined;

export function getCueIndex(): CueIndex {
  if (cueIndex) return cueIndex;
  const rules = redactionRules();
  const always: number[] = [];
  const cueRules = new Map<string, number[]>();
  rules.forEach((rule, i) => {
    if (rule.cues.length === 0) always.push(i);
    for (const cue of rule.cues) {
      if (cue.length === 0) throw new Error(`scrub rule ${rule.id} declares an empty cue`);
      cueRules.set(cue, [...(cueRules.get(cue) ?? []), i]);
    }
  });
  const byAnchor = new Map<string, AnchoredCue[]>();
  const byWord: Array<[string, number[]]> = [];
  for (const [cue, ruleIndexes] of cueRules) {
    let offset = -1;
    for (const ch of ANCHOR_PREFERENCE) {
      offset = cue.indexOf(ch);
      if (offset >= 0) break;
    }
    if (offset < 0) {
      byWord.push([cue, ruleIndexes]);
      continue;
    }
    const anchor = cue[offset] as string;
    byAnchor.set(anchor, [...(byAnchor.get(anchor) ?? []), { cue, offset, rules: ruleIndexes }]);
  }
  const anchors = byAnchor.size > 0 ? new RegExp(`[${[...byAnchor.keys()].map(escapeRegExp).join("")}]`, "g") : undefined;
  cueIndex = { anchors, byAnchor, byWord, rules, always };
  return cueIndex;
}

/** Run the rules whose cues occur in `text`, in rule order; each secret value replaced goes to `found` when given. */
export function applyRules(text: string, found?: string[]): string {
  const index = getCueIndex();
  const run = new Set<number>(index.always);
  const anchors = index.anchors;
  if (anchors) {
    anchors.lastIndex = 0;
    while (anchors.test(text)) {
      const at = anchors.lastIndex - 1;
      for (const { cue, offset, rules } of index.byAnchor.get(text[at] as string) ?? []) {
        if (text.startsWith(cue, at - offset)) for (const i of rules) run.add(i);
      }
    }
  }
  for (const [word, rules] of index.byWord) {
    if (text.includes(word)) for (const i of rules) run.add(i);
  }
  if (run.size === 0) return text;
  const order = [...run].sort((a, b) => a - b);
  let out = text;
  for (const i of order) out = (index.rules[i] as Rule).apply(out, found);
  return out;
}
