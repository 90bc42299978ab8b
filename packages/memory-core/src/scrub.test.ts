import { describe, expect, it } from "vitest";
import { REDACTED, redactSecrets, scrubSecrets } from "./scrub.js";

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
    [
      "JWT",
      "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
      "eyJhbGciOiJIUzI1NiJ9",
    ],
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
