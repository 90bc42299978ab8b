import { describe, expect, it } from "vitest";
import { DEFAULT_RETRY_POLICY, MAX_RETRY_AFTER_MS, parseRetryAfter, retryWait } from "./retry-policy.js";

const NOW = Date.UTC(2026, 9, 21, 7, 28, 0); // Wed, 21 Oct 2026 07:28:00 GMT

describe("parseRetryAfter", () => {
  it.each([
    ["0", 0],
    ["1", 1000],
    ["120", 120_000],
    [" 7 ", 7000],
    ["1.5", 1500],
    ["0.25", 250],
    ["0001", 1000],
  ])("reads delta-seconds %j as %i ms", (header, ms) => {
    expect(parseRetryAfter(header, NOW)).toBe(ms);
  });

  it.each([
    ["IMF-fixdate", "Wed, 21 Oct 2026 07:28:30 GMT", 30_000],
    ["obsolete RFC 850 date", "Wednesday, 21-Oct-26 07:29:00 GMT", 60_000],
    ["obsolete asctime date", "Wed Oct 21 07:28:02 2026", 2000],
    ["asctime date with a one-digit day", "Thu Oct  1 00:00:00 2026", 0],
    ["date already past", "Tue, 20 Oct 2026 07:28:00 GMT", 0],
    ["date now", "Wed, 21 Oct 2026 07:28:00 GMT", 0],
  ])("reads an HTTP-date (%s) relative to now", (_name, header, ms) => {
    expect(parseRetryAfter(header, NOW)).toBe(ms);
  });

  it("reads an HTTP-date relative to Date.now() by default", () => {
    const header = new Date(Date.now() + 60_000).toUTCString();
    const ms = parseRetryAfter(header)!;
    expect(ms).toBeGreaterThan(58_000);
    expect(ms).toBeLessThanOrEqual(60_000);
  });

  it.each([
    ["absent", null],
    ["undefined", undefined],
    ["empty", ""],
    ["blank", "   "],
    ["negative", "-1"],
    ["NaN", "NaN"],
    ["Infinity", "Infinity"],
    ["exponent notation", "1e3"],
    ["hexadecimal", "0x10"],
    ["a unit", "10s"],
    ["a trailing dot", "5."],
    ["words", "soon"],
    ["two values", "1, 2"],
    ["too many digits to represent", "9".repeat(400)],
    ["more seconds than any timer can wait", "999999999"],
    ["a date far in the future", "Fri, 31 Dec 9999 23:59:59 GMT"],
    ["a date without GMT", "Wed, 21 Oct 2026 07:28:30 PST"],
    ["a date that does not exist", "Sat, 31 Feb 2026 00:00:00 GMT"],
    ["a time that does not exist", "Wed, 21 Oct 2026 25:00:00 GMT"],
    ["an ISO date", "2026-10-21T07:28:30Z"],
    ["a loose date Date.parse would accept", "foo 1"],
  ])("ignores %s", (_name, header) => {
    expect(parseRetryAfter(header, NOW)).toBeUndefined();
  });

  it("accepts up to MAX_RETRY_AFTER_MS", () => {
    expect(parseRetryAfter(String(Math.floor(MAX_RETRY_AFTER_MS / 1000)), NOW)).toBe(Math.floor(MAX_RETRY_AFTER_MS / 1000) * 1000);
  });
});

describe("retryWait", () => {
  const policy = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 100, maxDelayMs: 5000, random: () => 0.5 };

  it("uses the server's Retry-After when it sent one, including 0", () => {
    expect(retryWait(policy, 0, 1000)).toBe(1000);
    expect(retryWait(policy, 3, 0)).toBe(0);
  });

  it("never waits longer than maxDelayMs, whatever the server asks", () => {
    expect(retryWait(policy, 0, 86_400_000)).toBe(5000);
    expect(retryWait(policy, 0, MAX_RETRY_AFTER_MS)).toBe(5000);
  });

  it("falls back to the backoff without Retry-After", () => {
    expect(retryWait(policy, 0, undefined)).toBe(75); // 100 with equal jitter at 0.5
    expect(retryWait(policy, 2, undefined)).toBe(300);
  });
});
