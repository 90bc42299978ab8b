import { createRequire } from "node:module";
import { rules as presetRules } from "@secretlint/secretlint-rule-preset-recommend";
import { describe, expect, it } from "vitest";
import { HermesMemoryError } from "./errors.js";
import { MAX_SCRUB_DEPTH, REDACTED, redactSecrets, scrubSecrets } from "./scrub.js";
import { SECRET_RULE_SET, SKIPPED_SET_RULES, redactionRules, secretRuleSetStatus } from "./scrub-rules.js";
import { LOOKALIKES, SECRET_CASES, fake } from "./test-support/secret-corpus.js";

describe("redactSecrets: each secret family", () => {
  const cases: Array<[string, string, string]> = [
    ["OpenAI classic", "key sk-abcdefghijklmnopqrstuvwxyz123456 here", "sk-abcdefghijklmnopqrstuvwxyz123456"],
    ["OpenAI project", "sk-proj-abcdefghijklmnopqrstuvwx_yz12", "sk-proj-abcdefghijklmnopqrstuvwx_yz12"],
    ["Anthropic", "use sk-ant-api03-abcdefghijklmnopqrstuvwxyzABCDEF now", "sk-ant-api03-abcdefghijklmnopqrstuvwxyzABCDEF"],
    ["GitHub classic", "ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"],
    ["GitHub oauth", "gho_abcdefghijklmnopqrstuvwxyz0123456789", "gho_abcdefghijklmnopqrstuvwxyz0123456789"],
    ["GitHub user", "ghu_abcdefghijklmnopqrstuvwxyz0123456789", "ghu_abcdefghijklmnopqrstuvwxyz0123456789"],
    ["GitHub server", "ghs_abcdefghijklmnopqrstuvwxyz0123456789", "ghs_abcdefghijklmnopqrstuvwxyz0123456789"],
    ["GitHub fine-grained", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "github_pat_11ABCDEFG0123456789_abcdefghijklmnop"],
    ["Slack", "token xoxb-1234567890-abcdefghij", "xoxb-1234567890-abcdefghij"],
    ["AWS", "AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"],
    ["Google", "AIzaSyA1234567890abcdefghijklmnopqrstuv", "AIzaSyA1234567890abcdefghijklmnopqrstuv"],
    ["Stripe secret", "sk_live_abcdefghijklmnop1234", "sk_live_abcdefghijklmnop1234"],
    ["Stripe restricted", "rk_live_abcdefghijklmnop1234", "rk_live_abcdefghijklmnop1234"],
    ["JWT", "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "eyJhbGciOiJIUzI1NiJ9"],
    ["Bearer", "Authorization: Bearer abcdef1234567890xyz", "abcdef1234567890xyz"],
    ["PEM", "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\nAAAA\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXk"],
    ["env assignment", "OPENAI_API_KEY=abcd1234efgh5678", "abcd1234efgh5678"],
    ["JSON field", '{"api_key": "s3cr3t-value"}', "s3cr3t-value"],
    ["YAML password", "password: hunter2", "hunter2"],
    ["double-encoded JSON", String.raw`{\"client_secret\": \"s3cr3t-value\"}`, "s3cr3t-value"],
    ["URL credentials", "postgres://admin:pa55word@db.example.com:5432/x", "pa55word"],
    ["query string", "https://example.com/path?access_token=zzzzzz&x=1", "zzzzzz"],
  ];
  for (const [family, input, secret] of cases) {
    it(`redacts ${family}`, () => {
      const out = redactSecrets(input);
      expect(out).not.toContain(secret);
      expect(out).toContain(REDACTED);
    });
  }

  it("keeps the name of an assignment and the host of a URL", () => {
    expect(redactSecrets("OPENAI_API_KEY=abcd1234efgh5678")).toBe("OPENAI_API_KEY=[redacted]");
    expect(redactSecrets("postgres://admin:pa55word@db.example.com/x")).toBe("postgres://[redacted]@db.example.com/x");
    expect(redactSecrets('{"password": "hunter2", "token": 5}')).toBe('{"password": "[redacted]", "token": 5}');
  });

  it("leaves ordinary text and look-alike names alone", () => {
    for (const text of [
      "max_tokens: 1000 tokens_used=5",
      "the bearer of news; author: john; oauth: enabled",
      "secret: true",
      "use sk-learn for that",
      "",
    ]) {
      expect(redactSecrets(text)).toBe(text);
    }
  });
});

describe("scrubSecrets", () => {
  it("redacts strings inside nested objects and arrays", () => {
    const input = { role: "tool", content: [{ type: "text", text: "GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123456789" }] };
    const out = scrubSecrets(input);
    expect(out.content[0]?.text).toBe(`GITHUB_TOKEN=${REDACTED}`);
  });

  it("learns a redacted token and masks its bare repetitions elsewhere", () => {
    const input = {
      toolResult: "export MY_PASSWORD=Zq8vLm2nPx4kRt7wQ",
      assistant: "I set it to Zq8vLm2nPx4kRt7wQ as asked",
      nested: [["again: Zq8vLm2nPx4kRt7wQ"]],
    };
    const out = scrubSecrets(input);
    expect(JSON.stringify(out)).not.toContain("Zq8vLm2nPx4kRt7wQ");
    expect(out.assistant).toBe("I set it to [redacted] as asked");
    expect(out.nested[0]?.[0]).toBe("again: [redacted]");
  });

  it("replaces longer learned tokens before their prefixes", () => {
    const input = ["api_key=AbCdEfGhIjKlMnOpQrSt token=AbCdEfGhIjKlMnOpQrStUvWx", "bare AbCdEfGhIjKlMnOpQrStUvWx"];
    const out = scrubSecrets(input);
    expect(out[1]).toBe("bare [redacted]");
  });

  it("returns the same object when nothing changes", () => {
    const input = { a: "hello", b: [1, 2, { c: "world" }], d: null };
    expect(scrubSecrets(input)).toBe(input);
    const text = "plain";
    expect(scrubSecrets(text)).toBe(text);
  });

  it("copies only the changed path and never mutates the input", () => {
    const untouched = { note: "fine" };
    const input = { secret: { text: "sk-abcdefghijklmnopqrstuvwxyz123456" }, untouched, list: ["a", "b"] };
    const snapshot = structuredClone(input);
    const out = scrubSecrets(input);
    expect(out).not.toBe(input);
    expect(out.secret).not.toBe(input.secret);
    expect(out.untouched).toBe(untouched);
    expect(out.list).toBe(input.list);
    expect(input).toEqual(snapshot);
  });

  it("keeps arrays (tuples) as arrays of the same length", () => {
    const tuple: [string, number, string] = ["sk-abcdefghijklmnopqrstuvwxyz123456", 7, "x"];
    const out = scrubSecrets(tuple);
    expect(Array.isArray(out)).toBe(true);
    expect(out).toEqual([REDACTED, 7, "x"]);
  });

  it("passes data: URLs, empty strings and non-plain objects through", () => {
    const dataUrl = "data:text/plain;base64,sk-abcdefghijklmnopqrstuvwxyz123456";
    const date = new Date(0);
    const input = { img: dataUrl, empty: "", date, other: "sk-abcdefghijklmnopqrstuvwxyz123456" };
    const out = scrubSecrets(input);
    expect(out.img).toBe(dataUrl);
    expect(out.empty).toBe("");
    expect(out.date).toBe(date);
    expect(out.other).toBe(REDACTED);
  });

  it("a learned token is not masked inside data: URLs", () => {
    const out = scrubSecrets(["password=Zq8vLm2nPx4kRt7wQ", "data:x,Zq8vLm2nPx4kRt7wQ"]);
    expect(out[1]).toBe("data:x,Zq8vLm2nPx4kRt7wQ");
  });

  it("survives cyclic structures", () => {
    const input: Record<string, unknown> = { text: "sk-abcdefghijklmnopqrstuvwxyz123456" };
    input.self = input;
    const out = scrubSecrets(input);
    expect(out.text).toBe(REDACTED);
  });

  it("passes primitives through", () => {
    expect(scrubSecrets(42)).toBe(42);
    expect(scrubSecrets(null)).toBe(null);
    expect(scrubSecrets(undefined)).toBe(undefined);
  });
});

/** Every 4-character fragment of `secret` that survives in `out` (beyond what the context has). */
function leakedFragments(secret: string, text: string, out: string): string[] {
  const context = text.split(secret).join(REDACTED);
  const leaks = new Set<string>();
  for (let i = 0; i + 4 <= secret.length; i++) {
    const fragment = secret.slice(i, i + 4);
    if (out.includes(fragment) && !context.includes(fragment)) leaks.add(fragment);
  }
  return [...leaks];
}

describe("the rule set", () => {
  it("pins and loads the documented secretlint preset", () => {
    const require = createRequire(import.meta.url);
    const pkg = require(`${SECRET_RULE_SET.name}/package.json`) as { version: string; license: string };
    expect(pkg.version).toBe(SECRET_RULE_SET.version);
    expect(pkg.license).toBe(SECRET_RULE_SET.license);
  });

  it("compiles every rule of the set except the documented skips, each with literal cues", () => {
    const status = secretRuleSetStatus();
    const ids = (presetRules as unknown as Array<{ meta: { id: string } }>).map((r) => r.meta.id);
    expect(status.skipped.map((s) => s.id).sort()).toEqual(Object.keys(SKIPPED_SET_RULES).sort());
    expect(status.compiled.length + status.skipped.length).toBe(ids.length);
    expect(status.compiled.length).toBeGreaterThanOrEqual(20);
    // A rule added by an upgrade of the set must get cues (else it runs on every text).
    expect(status.withoutCues).toEqual([]);
  });

  it("drives the set's rules: formats only the set knows are redacted", () => {
    for (const secret of [
      `lin_api_${fake("abcdefghijklmnopqrstuvwxyz0123456789", 40)}`,
      `dckr_pat_${fake("abcdefghijklmnopqrstuvwxyz", 27)}`,
      `figd_${fake("ABCDEFGHIJKLMNOPQRSTUVWXYZ", 40)}`,
    ]) {
      expect(redactSecrets(`key ${secret} here`)).toBe(`key ${REDACTED} here`);
    }
  });

  it("never honours secretlint-disable comments in the scrubbed text", () => {
    const token = `ghp_${fake("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 36)}`;
    expect(redactSecrets(`// secretlint-disable\n${token}\n// secretlint-enable`)).not.toContain(token);
  });

  it("every rule's cues are a superset of what it redacts (checked over the corpus)", () => {
    const texts = [...SECRET_CASES.map((c) => c.text), ...LOOKALIKES];
    for (const rule of redactionRules()) {
      for (const text of texts) {
        if (rule.apply(text) === text) continue;
        const hasCue = rule.cues.some((cue) => text.includes(cue));
        expect(hasCue, `${rule.id} redacted text without any of its cues: ${text.slice(0, 80)}`).toBe(true);
      }
    }
  });
});

describe("corpus: real-world secret formats", () => {
  it("has at least 60 formats and 30 look-alikes", () => {
    expect(new Set(SECRET_CASES.map((c) => c.name)).size).toBeGreaterThanOrEqual(60);
    expect(LOOKALIKES.length).toBeGreaterThanOrEqual(30);
  });

  for (const { name, text, secret } of SECRET_CASES) {
    it(`redacts the whole secret: ${name}`, () => {
      expect(text).toContain(secret);
      const out = redactSecrets(text);
      expect(out).toContain(REDACTED);
      expect(leakedFragments(secret, text, out), out).toEqual([]);
      // The same through the structured entry point, as a tool argument.
      const scrubbed = scrubSecrets({ args: { value: text } });
      expect(leakedFragments(secret, text, scrubbed.args.value)).toEqual([]);
    });
  }

  it("leaves every look-alike byte-identical", () => {
    for (const text of LOOKALIKES) expect(redactSecrets(text), text).toBe(text);
    const value = { list: [...LOOKALIKES] };
    expect(scrubSecrets(value)).toBe(value);
  });
});

describe("whole values", () => {
  it("redacts password values through & ; , ) and spaces but keeps the name", () => {
    expect(redactSecrets("password=Tr0ub4dor&3xyz")).toBe(`password=${REDACTED}`);
    expect(redactSecrets("db_password: a;b,c)d e f\nnext: line")).toBe(`db_password: ${REDACTED}\nnext: line`);
    expect(redactSecrets("mycli --password hunter2 --verbose")).toBe(`mycli --password ${REDACTED} --verbose`);
  });

  it("stops at & only inside a URL query string", () => {
    expect(redactSecrets("https://x.example/cb?access_token=abc123def&state=9")).toBe(
      `https://x.example/cb?access_token=${REDACTED}&state=9`,
    );
  });

  it("keeps the host of a URL whose password contains @ : / %", () => {
    expect(redactSecrets("postgres://app:p@ss:w/rd%40x@db.example.com:5432/app")).toBe(`postgres://${REDACTED}@db.example.com:5432/app`);
  });

  it("judges the fields of an object under a secret name one by one", () => {
    expect(redactSecrets('{"credentials":{"user":"ann","password":"hunter2"},"region":"eu"}')).toBe(
      `{"credentials":{"user":"ann","password":"${REDACTED}"},"region":"eu"}`,
    );
    expect(redactSecrets("password={Tr0ub4dor}")).toBe(`password=${REDACTED}`);
  });

  it("keeps JSON scalars that are not secrets, and the assignments after them", () => {
    expect(redactSecrets('{"token": 5, "password": "hunter2"}')).toBe(`{"token": 5, "password": "${REDACTED}"}`);
    expect(redactSecrets('{"password": 12345678}')).toBe(`{"password": ${REDACTED}}`);
  });
});

describe("a value identified as a secret is redacted at every occurrence", () => {
  const X = "Zq8vLm2nPx4kRt7wQ";
  it("in one string, before and after the place it was identified (redactSecrets)", () => {
    expect(redactSecrets(`note ${X} for later. AWS_SECRET_ACCESS_KEY=${X}`)).toBe(
      `note ${REDACTED} for later. AWS_SECRET_ACCESS_KEY=${REDACTED}`,
    );
    expect(redactSecrets(`AWS_SECRET_ACCESS_KEY=${X}\nI repeat: ${X}.`)).toBe(`AWS_SECRET_ACCESS_KEY=${REDACTED}\nI repeat: ${REDACTED}.`);
  });

  it("in one string given to scrubSecrets, and in a structured value where the bare copy comes first", () => {
    expect(scrubSecrets(`note ${X} for later. AWS_SECRET_ACCESS_KEY=${X}`)).not.toContain(X);
    const out = scrubSecrets({ a: `remember ${X}`, b: [`first ${X}, then password: ${X}`] });
    expect(JSON.stringify(out)).not.toContain(X);
    expect(out.a).toBe(`remember ${REDACTED}`);
  });

  it("short values and values with characters outside a token's are learned whole", () => {
    expect(redactSecrets("my password is hunter22, so password: hunter22")).toBe(`my password is ${REDACTED}, so password: ${REDACTED}`);
    const spaced = 'db_password: "p@ss w0rd!" and later p@ss w0rd! again';
    expect(redactSecrets(spaced)).toBe(`db_password: "${REDACTED}" and later ${REDACTED} again`);
    const bearer = redactSecrets("curl -H 'Authorization: Bearer q1w2e3r4t5y6' and the token q1w2e3r4t5y6 expires");
    expect(bearer).not.toContain("q1w2e3r4t5y6");
  });

  it("a short learned value is masked only where it stands alone, never inside other words", () => {
    expect(redactSecrets("password: pass1\nthe passenger pass1x waits; pass1 is bad")).toBe(
      `password: ${REDACTED}\nthe passenger pass1x waits; ${REDACTED} is bad`,
    );
  });

  it("learning never rewrites the redaction marker itself", () => {
    expect(redactSecrets("password: dacted\nsee [redacted]")).toBe(`password: ${REDACTED}\nsee [redacted]`);
  });

  it("many distinct secrets in one large value stay linear", () => {
    const lines = Array.from({ length: 20_000 }, (_, i) =>
      i % 2 === 0 ? `password=v${String(i >> 1).padStart(6, "0")}x` : `so v${String(i >> 1).padStart(6, "0")}x it is`,
    );
    const start = performance.now();
    const out = redactSecrets(lines.join("\n"));
    const scrubbed = scrubSecrets({ lines });
    const ms = performance.now() - start;
    expect(out).not.toMatch(/v\d{6}x/);
    expect(JSON.stringify(scrubbed)).not.toMatch(/v\d{6}x/);
    expect(ms, `took ${ms.toFixed(0)} ms`).toBeLessThan(3000);
  });
});

describe("assignment names and operators", () => {
  const VALUE = "abcd1234efgh5678ijkl";
  const assignments = [
    `api key = '${VALUE}'`,
    `api-key: "${VALUE}"`,
    `API_KEY=${VALUE}`,
    `apiKey => \`${VALUE}\``,
    `api.key   :   ${VALUE}`,
    `secret key: ${VALUE}`,
    `Secret-Key=${VALUE}`,
    `access token = ${VALUE}`,
    `access key id: ${VALUE}`,
    `client secret := ${VALUE}`,
    `password=>"${VALUE}"`,
    `'api_key' => '${VALUE}'`,
    `private key = ${VALUE}`,
    `auth token:${VALUE}`,
  ];
  for (const text of assignments) {
    it(`redacts the value and keeps the name: ${text}`, () => {
      expect(redactSecrets(text)).toBe(text.replace(VALUE, REDACTED));
    });
  }

  const prose = [
    "the api key is rotated weekly",
    "Rotate the secret key every month and keep the access token in the vault.",
    "api keys are issued per team; the api key management page lists them",
    "the password policy requires 12 characters",
    "set max tokens to 1000",
    "key = value, monkey: primate, turkey=roasted",
    "private keys: never share them",
    "api key rotation => weekly",
  ];
  for (const text of prose) {
    it(`leaves ordinary prose alone: ${text}`, () => {
      expect(redactSecrets(text)).toBe(text);
    });
  }
});

describe("fast path", () => {
  /** Wrap every rule's `apply` to count calls; returns the counters and a restore function. */
  function countRuns(): { runs: Map<string, number>; restore: () => void } {
    const runs = new Map<string, number>();
    const originals = redactionRules().map((rule) => [rule, rule.apply] as const);
    for (const [rule, apply] of originals) {
      rule.apply = (text: string, found?: string[]) => {
        runs.set(rule.id, (runs.get(rule.id) ?? 0) + 1);
        return apply(text, found);
      };
    }
    return { runs, restore: () => originals.forEach(([rule, apply]) => (rule.apply = apply)) };
  }

  it("ordinary prose runs no rule at all", () => {
    const { runs, restore } = countRuns();
    try {
      const prose = "We walked along the river after lunch and talked about the plans for the garden this spring";
      expect(redactSecrets(prose)).toBe(prose);
      expect([...runs.keys()]).toEqual([]);
      // Punctuation only wakes the few rules keyed on it (assignments, flags, dotted tokens).
      const punctuated = "Note: we met at 10:30 - see the minutes, then lunch. Also x = y.";
      expect(redactSecrets(punctuated)).toBe(punctuated);
      const keyedOnPunctuation = redactionRules()
        .filter((rule) => rule.cues.some((cue) => [":", "=", "-", "."].includes(cue)))
        .map((rule) => rule.id);
      expect([...runs.keys()].every((id) => keyedOnPunctuation.includes(id))).toBe(true);
      expect(keyedOnPunctuation.length).toBeLessThanOrEqual(8);
    } finally {
      restore();
    }
  });

  it("a text with one cue runs only the rules that declare it", () => {
    const { runs, restore } = countRuns();
    try {
      redactSecrets(`deploy with glpat-${fake("abcdefghijklmnopqrstuvwxyz", 20)} today`);
      const ran = [...runs.keys()];
      expect(ran).toContain("@secretlint/secretlint-rule-gitlab");
      expect(ran).toContain("gitlab-token");
      expect(ran.length).toBeLessThan(6);
    } finally {
      restore();
    }
  });
});

describe("hostile input", () => {
  const MB = 1024 * 1024;
  const hostile: Array<[string, string]> = [
    ["assignment without end", `password=${"a&;,) ".repeat(MB / 6)}`],
    ["many assignments", "api_key=x ".repeat(MB / 10)],
    ["many BEGIN lines, no END", "-----BEGIN RSA PRIVATE KEY-----\nMIIabc\n".repeat(MB / 40)],
    ["URL userinfo without @", "x://a:b".repeat(MB / 7)],
    ["URL userinfo with many @", `https://u:${"@:".repeat(MB / 2)}`],
    ["sendgrid-like", "SG.aaaa.".repeat(MB / 8)],
    ["long token run", `sk-${"a".repeat(MB)}`],
    ["dotted base64", "eyJaaaaaaaaa.".repeat(MB / 13)],
    ["authorization headers", "Authorization: ".repeat(MB / 15)],
    ["flags", "--password ".repeat(MB / 11)],
    ["cue soup", "key token secret passw sk- ghp_ xox AKIA eyJ :// bearer basic ".repeat(MB / 64)],
    ["base64 soup after Basic", `Basic ${"QUJD".repeat(MB / 4)}`],
    ["anchor characters only", ":=-._/~A1".repeat(MB / 9)],
    ["capitals and digits", "AKIA1SK2SG.3eyJ4".repeat(MB / 16)],
  ];
  for (const [name, text] of hostile) {
    it(`a 1 MB adversarial string completes quickly: ${name}`, () => {
      const start = performance.now();
      const out = redactSecrets(text);
      const ms = performance.now() - start;
      expect(typeof out).toBe("string");
      expect(ms, `${name} took ${ms.toFixed(0)} ms`).toBeLessThan(3000);
    });
  }
});

describe("deep nesting", () => {
  function nest(depth: number, leaf: unknown, kind: "array" | "object"): unknown {
    let value = leaf;
    for (let i = 0; i < depth; i++) value = kind === "array" ? [value] : { child: value };
    return value;
  }

  for (const kind of ["array", "object"] as const) {
    it(`20,000 levels of ${kind}s throw INVALID_ARGUMENT, never RangeError`, () => {
      const value = nest(20_000, "password=hunter2", kind);
      let error: unknown;
      try {
        scrubSecrets(value);
      } catch (e) {
        error = e;
      }
      expect(error).not.toBeInstanceOf(RangeError);
      expect(HermesMemoryError.hasCode(error, "INVALID_ARGUMENT")).toBe(true);
      expect((error as Error).message).toContain(String(MAX_SCRUB_DEPTH));
    });
  }

  it("scrubs values up to the maximum depth, copying only the changed path", () => {
    const value = nest(MAX_SCRUB_DEPTH - 1, "password=hunter2", "object") as Record<string, unknown>;
    const out = scrubSecrets(value);
    expect(out).not.toBe(value);
    let cursor: unknown = out;
    for (let i = 0; i < MAX_SCRUB_DEPTH - 1; i++) cursor = (cursor as { child: unknown }).child;
    expect(cursor).toBe(`password=${REDACTED}`);
    expect(JSON.stringify(value)).toContain("hunter2");
  });

  it("a cycle deeper than the stack of a recursive walk is still fine", () => {
    const root: Record<string, unknown> = { text: "password=hunter2" };
    let cursor = root;
    for (let i = 0; i < 500; i++) {
      const next: Record<string, unknown> = { up: root };
      cursor.next = next;
      cursor = next;
    }
    const out = scrubSecrets(root);
    expect(out.text).toBe(`password=${REDACTED}`);
  });
});

describe("__proto__ keys are plain data", () => {
  const json = (extra: string) =>
    JSON.parse(`{"__proto__": {"polluted": true, "isAdmin": true}, "content": "${extra}"}`) as Record<string, unknown>;

  function expectPlain(out: Record<string, unknown>): void {
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, "__proto__")).toBe(true);
    expect(out.polluted).toBeUndefined();
    expect(out.isAdmin).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  }

  it("an argument object with nothing to redact comes back as the same plain object", () => {
    const args = json("hello");
    const out = scrubSecrets(args);
    expect(out).toBe(args);
    expectPlain(out);
  });

  it("an argument object whose sibling value is redacted keeps __proto__ as an own key", () => {
    const args = json("password=hunter2");
    const out = scrubSecrets(args);
    expect(out).not.toBe(args);
    expect(out.content).toBe(`password=${REDACTED}`);
    expectPlain(out);
    expect(Object.getOwnPropertyDescriptor(out, "__proto__")?.value).toEqual({ polluted: true, isAdmin: true });
  });

  it("a redaction inside the __proto__ value is copied as data too", () => {
    const args = JSON.parse('{"__proto__": {"token": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"}, "n": 1}') as Record<string, unknown>;
    const out = scrubSecrets(args);
    expectPlain(out);
    expect(Object.getOwnPropertyDescriptor(out, "__proto__")?.value).toEqual({ token: REDACTED });
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
  });
});
