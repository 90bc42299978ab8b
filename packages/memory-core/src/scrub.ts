/**
 * Egress scrub: every value the manager hands to a provider (turns, transcripts, recall queries,
 * mirrored memory writes, tool arguments) passes through `scrubSecrets`, so credentials that the
 * user pasted or a tool printed never land in a provider's store (REFERENCE §2.11).
 */

/** What a redacted secret is replaced with. */
export const REDACTED = "[redacted]";

interface RedactionRule {
  pattern: RegExp;
  replace: string | ((match: string, ...groups: string[]) => string);
}

// Names of assignments whose value is a secret. The name must END in one of these words, so
// `max_tokens: 1000` or `tokens_used=5` are left alone while `GITHUB_TOKEN=...` is caught.
const SECRET_NAME =
  "[A-Za-z0-9_.-]{0,40}?(?:api[_-]?key|apikey|secret(?:[_-]?key)?|token|passw(?:or)?d|passphrase|credentials?|private[_-]?key|access[_-]?key(?:[_-]?id)?)";

// Values that are obviously not secrets (flags, counts, placeholders) are kept so the scrub does
// not destroy ordinary configuration text.
const NON_SECRET_VALUE = /^(?:true|false|null|none|undefined|yes|no|on|off|\d{1,12}|\[redacted\]?|\*+|<[^>]*>|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?)$/i;

function keepOrRedact(prefix: string, open: string, value: string, close: string): string {
  if (value.length === 0 || NON_SECRET_VALUE.test(value)) return `${prefix}${open}${value}${close}`;
  return `${prefix}${open}${REDACTED}${close}`;
}

/** Ordered: whole-block and prefixed formats first, generic assignments last. */
const RULES: RedactionRule[] = [
  // PEM private keys (RSA, EC, OPENSSH, ENCRYPTED, plain PKCS#8); the whole block goes.
  {
    pattern: /-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY-----[\s\S]{0,8192}?-----END \1PRIVATE KEY-----/g,
    replace: REDACTED,
  },
  // URLs carrying credentials: scheme://user:password@host → scheme://[redacted]@host
  {
    pattern: /\b([a-zA-Z][a-zA-Z0-9+.-]{0,30}:\/\/)[^\s/?#@:'"<>]{1,256}:[^\s/?#@'"<>]{1,256}@/g,
    replace: (_m, scheme: string) => `${scheme}${REDACTED}@`,
  },
  // HTTP bearer tokens.
  { pattern: /\b(Bearer)\s+[A-Za-z0-9\-._~+/]{8,}=*/gi, replace: (_m, word: string) => `${word} ${REDACTED}` },
  // Anthropic, OpenAI project and classic keys (sk-ant-…, sk-proj-…, sk-…).
  { pattern: /\bsk-(?:ant-|proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}/g, replace: REDACTED },
  // GitHub personal, OAuth, user-to-server, server-to-server and refresh tokens; fine-grained PATs.
  { pattern: /\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}/g, replace: REDACTED },
  { pattern: /\bgithub_pat_[A-Za-z0-9_]{20,}/g, replace: REDACTED },
  // Slack bot/user/app/config tokens.
  { pattern: /\bxox[abposer]-[A-Za-z0-9-]{10,}/g, replace: REDACTED },
  // AWS access key ids (long-term and temporary).
  { pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g, replace: REDACTED },
  // Google API keys.
  { pattern: /\bAIza[0-9A-Za-z_-]{35}/g, replace: REDACTED },
  // Stripe secret and restricted keys.
  { pattern: /\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}/g, replace: REDACTED },
  // JSON Web Tokens (header.payload.signature, header starts with base64url '{"').
  { pattern: /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, replace: REDACTED },
  // "api_key": "value", 'password': 'v', KEY=value, key: value, key="value" (JSON, env files,
  // YAML, CLI flags, query strings), and JSON that was encoded twice (\"token\": \"v\").
  // Only the value is replaced; the name stays readable.
  {
    pattern: new RegExp(
      `((?<![A-Za-z0-9])\\\\?["']?${SECRET_NAME}(?![A-Za-z0-9])\\\\?["']?\\s*[:=]\\s*)` +
        `(?:\\\\"((?:[^"\\\\\\n]|\\\\[^"\\n])*)\\\\"|"((?:[^"\\\\\\n]|\\\\.)*)"|'([^'\\n]*)'|([^\\s"'\\\\,;&}\\])]+))`,
      "gi",
    ),
    replace: (_m, prefix: string, escaped?: string, dq?: string, sq?: string, bare?: string) => {
      if (escaped !== undefined) return keepOrRedact(prefix, '\\"', escaped, '\\"');
      if (dq !== undefined) return keepOrRedact(prefix, '"', dq, '"');
      if (sq !== undefined) return keepOrRedact(prefix, "'", sq, "'");
      return keepOrRedact(prefix, "", bare ?? "", "");
    },
  },
];

/** A literal every RULES match contains (a superset test; false positives just run the rules). */
const SECRET_CUES = /PRIVATE KEY|:\/\/|bearer|sk-|gh[pousr]_|github_pat_|xox|AKIA|ASIA|AIza|_(?:live|test)_|eyJ|key|secret|token|passw|passphrase|credential/i;

/**
 * Redact API keys, tokens, private keys, credential URLs and secret assignments in one string,
 * replacing each secret with `[redacted]`. Pure and synchronous; never throws. Use `scrubSecrets`
 * for structured values (it also applies the "learning" step across the whole value).
 */
export function redactSecrets(text: string): string {
  if (typeof text !== "string" || text.length === 0) return text;
  // Hot path (every syncAll): ordinary prose has none of the cues below, and one scan of it is far
  // cheaper than running every rule. Each rule's match necessarily contains one of these cues.
  if (!SECRET_CUES.test(text)) return text;
  let out = text;
  for (const rule of RULES) {
    rule.pattern.lastIndex = 0;
    out = out.replace(rule.pattern, rule.replace as (substring: string, ...args: string[]) => string);
  }
  return out;
}

const TOKEN = /[A-Za-z0-9_\-./+]{16,}/g;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

function isScrubbable(text: string): boolean {
  return text.length > 0 && !text.startsWith("data:");
}

/** Visit every scrubbable string in plain objects/arrays (cycle-safe). */
function collectStrings(value: unknown, out: Set<string>, seen: WeakSet<object>): void {
  if (typeof value === "string") {
    if (isScrubbable(value)) out.add(value);
    return;
  }
  if (Array.isArray(value)) {
    if (seen.has(value)) return;
    seen.add(value);
    for (const item of value) collectStrings(item, out, seen);
    return;
  }
  if (isPlainObject(value)) {
    if (seen.has(value)) return;
    seen.add(value);
    for (const key of Object.keys(value)) collectStrings(value[key], out, seen);
  }
}

/** Rebuild `value` with `map` applied to strings; untouched containers are returned as is. */
function rebuild(value: unknown, map: (s: string) => string, seen: Map<object, unknown>): unknown {
  if (typeof value === "string") return isScrubbable(value) ? map(value) : value;
  if (Array.isArray(value)) {
    if (seen.has(value)) return seen.get(value);
    seen.set(value, value);
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item: unknown = value[i];
      const next = rebuild(item, map, seen);
      if (next !== item) {
        copy ??= value.slice();
        copy[i] = next;
      }
    }
    if (copy) seen.set(value, copy);
    return copy ?? value;
  }
  if (isPlainObject(value)) {
    if (seen.has(value)) return seen.get(value);
    seen.set(value, value);
    let copy: Record<string, unknown> | undefined;
    for (const key of Object.keys(value)) {
      const item = value[key];
      const next = rebuild(item, map, seen);
      if (next !== item) {
        copy ??= Object.assign(Object.create(Object.getPrototypeOf(value) as object | null) as Record<string, unknown>, value);
        copy[key] = next;
      }
    }
    if (copy) seen.set(value, copy);
    return copy ?? value;
  }
  return value;
}

function replaceAllLiteral(text: string, token: string): string {
  return text.includes(token) ? text.split(token).join(REDACTED) : text;
}

/**
 * Return `value` with secrets redacted in every string inside plain objects and arrays. Called by
 * the manager on every hand-off to a provider. Never mutates its input: unchanged values are
 * returned as the SAME object, changed containers are shallow copies; arrays stay arrays of the
 * same length; class instances, Maps, Buffers etc. pass through untouched; strings starting with
 * `data:` (inline media) and empty strings pass through.
 *
 * After redaction, tokens (`[A-Za-z0-9_\-./+]{16,}`) that disappeared from some string are
 * "learned" and masked everywhere else in the same value, longest first, so a key detected in a
 * tool result is also hidden where the model repeated it bare.
 */
export function scrubSecrets<T>(value: T): T {
  if (typeof value === "string") return scrubStrings([value], value) as T;
  if (!Array.isArray(value) && !isPlainObject(value)) return value;
  const strings = new Set<string>();
  collectStrings(value, strings, new WeakSet());
  return scrubStrings([...strings], value) as T;
}

function scrubStrings<T>(strings: string[], value: T): unknown {
  const redacted = new Map<string, string>();
  const learned = new Set<string>();
  for (const original of strings) {
    if (!isScrubbable(original)) continue;
    const out = redactSecrets(original);
    redacted.set(original, out);
    if (out === original) continue;
    for (const match of original.matchAll(TOKEN)) {
      if (!out.includes(match[0])) learned.add(match[0]);
    }
  }
  const tokens = [...learned].sort((a, b) => b.length - a.length);
  const finish = (s: string): string => {
    let out = redacted.get(s) ?? s;
    for (const token of tokens) out = replaceAllLiteral(out, token);
    return out;
  };
  if (typeof value === "string") return isScrubbable(value) ? finish(value) : value;
  if (tokens.length === 0 && [...redacted].every(([k, v]) => k === v)) return value;
  return rebuild(value, finish, new Map());
}
