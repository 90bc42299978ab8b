import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "./errors.js";
import type { Logger } from "./logger.js";
import { runWithProfile } from "./profile.js";
import {
  DEFAULT_SPILL_CONFIG,
  SPILL_MARKER_FILE,
  normalizeSpillConfig,
  pruneSpillFiles,
  sanitizeSessionSegment,
  spillIfOversized,
} from "./spill.js";

let home: string;
beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-spill-"));
});
afterEach(() => {
  fs.rmSync(home, { recursive: true, force: true });
});

function savedPath(preview: string): string {
  const match = /full content saved to (.+)\]$/m.exec(preview);
  if (!match?.[1]) throw new Error(`no path in preview: ${preview}`);
  return match[1];
}

function recordingLogger(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  return { warnings, debug() {}, info() {}, error() {}, warn: (m: string) => void warnings.push(m) };
}

describe("normalizeSpillConfig", () => {
  it("has the documented defaults", () => {
    expect(DEFAULT_SPILL_CONFIG).toEqual({ enabled: true, maxChars: 10000, previewHead: 500, previewTail: 500, directory: null });
    expect(normalizeSpillConfig(undefined)).toEqual(DEFAULT_SPILL_CONFIG);
    expect(normalizeSpillConfig("garbage")).toEqual(DEFAULT_SPILL_CONFIG);
  });

  it("accepts snake_case (config.yaml) and camelCase overrides", () => {
    expect(normalizeSpillConfig({ enabled: false, max_chars: 50, preview_head: 10, preview_tail: 0, directory: "/x/y" })).toEqual({
      enabled: false,
      maxChars: 50,
      previewHead: 10,
      previewTail: 0,
      directory: "/x/y",
    });
    expect(normalizeSpillConfig({ maxChars: "70", previewHead: 3, previewTail: 4 })).toMatchObject({
      maxChars: 70,
      previewHead: 3,
      previewTail: 4,
    });
  });

  it("falls back to defaults for bad values", () => {
    const config = normalizeSpillConfig({
      enabled: null,
      max_chars: "not-a-number",
      preview_head: -100,
      preview_tail: null,
      directory: 123,
    });
    expect(config).toEqual(DEFAULT_SPILL_CONFIG);
    expect(normalizeSpillConfig({ max_chars: 0 }).maxChars).toBe(10000);
    expect(normalizeSpillConfig({ max_chars: -5 }).maxChars).toBe(10000);
    expect(normalizeSpillConfig({ directory: "   " }).directory).toBeNull();
  });

  it("expands ~ in the directory", () => {
    expect(normalizeSpillConfig({ directory: "~/spills" }).directory).toBe(path.join(os.homedir(), "spills"));
  });

  it("coerces enabled like a flag", () => {
    expect(normalizeSpillConfig({ enabled: 0 }).enabled).toBe(false);
    expect(normalizeSpillConfig({ enabled: "off" }).enabled).toBe(false);
    expect(normalizeSpillConfig({ enabled: "yes" }).enabled).toBe(true);
  });
});

describe("sanitizeSessionSegment", () => {
  it("defaults to no-session and neutralises path separators", () => {
    expect(sanitizeSessionSegment(null)).toBe("no-session");
    expect(sanitizeSessionSegment("")).toBe("no-session");
    expect(sanitizeSessionSegment("../../etc/passwd")).toBe("____etc_passwd");
    expect(sanitizeSessionSegment("a\\b/c")).toBe("a_b_c");
    expect(sanitizeSessionSegment("..")).toBe("_");
  });
});

describe("spill directory names", () => {
  it("keep a session id of up to 128 bytes as it is, and bound a longer one to a readable prefix and a hash", () => {
    const short = "cli-2026-05-01-" + "x".repeat(100);
    expect(sanitizeSessionSegment(short)).toBe(short);
    const long = "s".repeat(300);
    const segment = sanitizeSessionSegment(long);
    expect(Buffer.byteLength(segment)).toBeLessThanOrEqual(128);
    expect(segment).toMatch(/^s{40,}-[0-9a-f]{24}$/);
    expect(sanitizeSessionSegment(long)).toBe(segment);
    expect(sanitizeSessionSegment(`${long}t`)).not.toBe(segment);
    const wide = sanitizeSessionSegment("é".repeat(100) + "/../" + "😀".repeat(50));
    expect(Buffer.byteLength(wide)).toBeLessThanOrEqual(128);
    expect(wide).not.toMatch(/[/\\]|\.\.|\uFFFD/);
    expect(wide.startsWith("é")).toBe(true);
  });

  it("a 300-character session id spills into a directory under the base", async () => {
    const base = path.join(home, "spill");
    const sessionId = `${"a".repeat(150)}/..${"b".repeat(150)}`;
    const preview = await spillIfOversized("y".repeat(5000), { sessionId, config: { maxChars: 100, directory: base } });
    const file = savedPath(preview);
    expect(path.dirname(path.dirname(file))).toBe(base);
    expect(fs.readFileSync(file, "utf8")).toBe(`${"y".repeat(5000)}\n`);
  });
});

describe("spillIfOversized", () => {
  it("returns empty for null/undefined and leaves empty text alone", async () => {
    expect(await spillIfOversized(null, { hermesHome: home })).toBe("");
    expect(await spillIfOversized(undefined, { hermesHome: home })).toBe("");
    expect(await spillIfOversized("", { hermesHome: home })).toBe("");
  });

  it("returns text under the cap unchanged and writes nothing", async () => {
    const text = "x".repeat(100);
    expect(await spillIfOversized(text, { hermesHome: home, config: { maxChars: 100 } })).toBe(text);
    expect(fs.existsSync(path.join(home, "hook_outputs"))).toBe(false);
  });

  it("bypasses when disabled (no files)", async () => {
    const text = "y".repeat(500);
    expect(await spillIfOversized(text, { hermesHome: home, config: { enabled: false, maxChars: 10 } })).toBe(text);
    expect(fs.existsSync(path.join(home, "hook_outputs"))).toBe(false);
  });

  it("spills oversized text: header, head/tail markers, full file under the session dir", async () => {
    const text = "H".repeat(30) + "M".repeat(120) + "T".repeat(30);
    const preview = await spillIfOversized(text, {
      hermesHome: home,
      sessionId: "sess-1",
      source: "sqlite memory prefetch",
      config: { maxChars: 100, previewHead: 30, previewTail: 30 },
    });
    const file = savedPath(preview);
    expect(preview.split("\n")).toEqual([
      `[sqlite memory prefetch output truncated — 180 chars; full content saved to ${file}]`,
      "--- head ---",
      "H".repeat(30),
      "--- tail ---",
      "T".repeat(30),
    ]);
    expect(path.dirname(file)).toBe(path.join(home, "hook_outputs", "sess-1"));
    expect(path.basename(file)).toMatch(/^[0-9a-f]{32}\.txt$/);
    expect(fs.readFileSync(file, "utf8")).toBe(`${text}\n`);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    expect(fs.readFileSync(path.join(path.dirname(file), SPILL_MARKER_FILE), "utf8").trim()).toBe("hook_outputs");
  });

  it("formats large counts with thousands separators and uses the default source", async () => {
    const preview = await spillIfOversized("z".repeat(10_001), { hermesHome: home });
    expect(preview.split("\n")[0]).toMatch(/^\[hook output truncated — 10,001 chars; full content saved to .+\]$/);
    expect(preview.length).toBeLessThan(10_001);
  });

  it("does not add a second trailing newline", async () => {
    const text = `${"a".repeat(50)}\n`;
    const file = savedPath(await spillIfOversized(text, { hermesHome: home, config: { maxChars: 10 } }));
    expect(fs.readFileSync(file, "utf8")).toBe(text);
  });

  it("uses the no-session segment without a session id", async () => {
    const file = savedPath(await spillIfOversized("q".repeat(50), { hermesHome: home, config: { maxChars: 10 } }));
    expect(path.dirname(file)).toBe(path.join(home, "hook_outputs", "no-session"));
  });

  it("sanitises path separators so the file stays under the base", async () => {
    const file = savedPath(
      await spillIfOversized("q".repeat(50), { hermesHome: home, sessionId: "../../evil/x", config: { maxChars: 10 } }),
    );
    const base = path.join(home, "hook_outputs");
    expect(path.dirname(path.dirname(file))).toBe(base);
    expect(path.basename(path.dirname(file))).toBe("____evil_x");
  });

  it("returns a failure preview shorter than the input when the write fails", async () => {
    const blocker = path.join(home, "not-a-dir");
    fs.writeFileSync(blocker, "file in the way");
    const logger = recordingLogger();
    const text = "w".repeat(5000);
    const preview = await spillIfOversized(text, { config: { maxChars: 100, directory: blocker }, logger });
    expect(preview).toContain("spill write failed");
    expect(preview.split("\n")[0]).toBe("[hook output truncated — 5,000 chars; full content unavailable — spill write failed]");
    expect(preview.length).toBeLessThan(text.length);
    expect(logger.warnings[0]).toMatch(/^hook output spill failed: /);
  });

  it("throws on failure when raiseOnFailure is set", async () => {
    const blocker = path.join(home, "not-a-dir");
    fs.writeFileSync(blocker, "x");
    await expect(
      spillIfOversized("w".repeat(500), { config: { maxChars: 100, directory: blocker }, raiseOnFailure: true }),
    ).rejects.toSatisfy((e: unknown) => HermesMemoryError.hasCode(e, "STORAGE_FAILED"));
  });

  it("head-only preview when the tail is 0", async () => {
    const preview = await spillIfOversized("a".repeat(20) + "b".repeat(200), {
      hermesHome: home,
      config: { maxChars: 100, previewHead: 20, previewTail: 0 },
    });
    expect(preview).toContain("--- head ---\n" + "a".repeat(20));
    expect(preview).not.toContain("--- tail ---");
  });

  it("no head section when the head is 0", async () => {
    const preview = await spillIfOversized("a".repeat(200), {
      hermesHome: home,
      config: { maxChars: 100, previewHead: 0, previewTail: 5 },
    });
    expect(preview).not.toContain("--- head ---");
    expect(preview.endsWith("--- tail ---\naaaaa")).toBe(true);
  });

  it("coerces non-string input", async () => {
    expect(await spillIfOversized(12345, { hermesHome: home })).toBe("12345");
    const big = { toString: () => "n".repeat(300) };
    const preview = await spillIfOversized(big, { hermesHome: home, config: { maxChars: 100 } });
    expect(fs.readFileSync(savedPath(preview), "utf8")).toBe(`${"n".repeat(300)}\n`);
  });

  it("defaults the base to <active HERMES_HOME>/hook_outputs", async () => {
    const preview = await runWithProfile(home, () => spillIfOversized("p".repeat(200), { config: { maxChars: 100 } }));
    expect(savedPath(preview).startsWith(path.join(home, "hook_outputs") + path.sep)).toBe(true);
  });

  it("honours a configured directory (snake_case keys accepted)", async () => {
    const dir = path.join(home, "custom");
    const preview = await spillIfOversized("p".repeat(200), { hermesHome: home, config: { max_chars: 100, directory: dir } as never });
    expect(savedPath(preview).startsWith(path.join(dir, "no-session") + path.sep)).toBe(true);
  });

  it("refuses to adopt an existing unmarked session directory", async () => {
    const existing = path.join(home, "hook_outputs", "sess");
    fs.mkdirSync(existing, { recursive: true });
    fs.writeFileSync(path.join(existing, "precious.txt"), "keep");
    const preview = await spillIfOversized("r".repeat(200), { hermesHome: home, sessionId: "sess", config: { maxChars: 100 } });
    expect(preview).toContain("spill write failed");
    expect(fs.readdirSync(existing)).toEqual(["precious.txt"]);
  });

  it("refuses a symlinked session directory", async () => {
    const target = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-spill-target-"));
    try {
      fs.writeFileSync(path.join(target, SPILL_MARKER_FILE), "hook_outputs");
      fs.mkdirSync(path.join(home, "hook_outputs"), { recursive: true });
      fs.symlinkSync(target, path.join(home, "hook_outputs", "sess"));
      const preview = await spillIfOversized("r".repeat(200), { hermesHome: home, sessionId: "sess", config: { maxChars: 100 } });
      expect(preview).toContain("spill write failed");
      expect(fs.readdirSync(target)).toEqual([SPILL_MARKER_FILE]);
    } finally {
      fs.rmSync(target, { recursive: true, force: true });
    }
  });

  it("concurrent spills into a new session directory all succeed", async () => {
    const previews = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        spillIfOversized(String(i).repeat(200), { hermesHome: home, sessionId: "race", config: { maxChars: 100 } }),
      ),
    );
    for (const preview of previews) expect(preview).toContain("full content saved to");
    const files = fs.readdirSync(path.join(home, "hook_outputs", "race")).filter((f) => f.endsWith(".txt"));
    expect(files).toHaveLength(8);
  });

  it("counts code points, not UTF-16 units, and never splits a surrogate pair", async () => {
    const text = "😀".repeat(150);
    const preview = await spillIfOversized(text, { hermesHome: home, config: { maxChars: 100, previewHead: 3, previewTail: 2 } });
    expect(preview).toContain("— 150 chars;");
    expect(preview).toContain("--- head ---\n😀😀😀\n--- tail ---\n😀😀");
  });
});

describe("pruneSpillFiles", () => {
  function touch(file: string, ageMs: number): void {
    fs.writeFileSync(file, "x");
    const when = new Date(Date.now() - ageMs);
    fs.utimesSync(file, when, when);
  }

  it("deletes old files only inside marked directories", async () => {
    const base = path.join(home, "hook_outputs");
    const marked = path.join(base, "marked");
    const unmarked = path.join(base, "unmarked");
    fs.mkdirSync(marked, { recursive: true });
    fs.mkdirSync(unmarked, { recursive: true });
    fs.writeFileSync(path.join(marked, SPILL_MARKER_FILE), "hook_outputs\n");
    touch(path.join(marked, "old.txt"), 10 * 86_400_000);
    touch(path.join(marked, "new.txt"), 1000);
    touch(path.join(unmarked, "old.txt"), 10 * 86_400_000);

    expect(await pruneSpillFiles(base, { retentionMs: 86_400_000 })).toBe(1);
    expect(fs.readdirSync(marked).sort()).toEqual([SPILL_MARKER_FILE, "new.txt"].sort());
    expect(fs.readdirSync(unmarked)).toEqual(["old.txt"]);
  });

  it("ignores a directory whose marker is a symlink or has the wrong content", async () => {
    const base = path.join(home, "hook_outputs");
    const linked = path.join(base, "linked");
    const wrong = path.join(base, "wrong");
    fs.mkdirSync(linked, { recursive: true });
    fs.mkdirSync(wrong, { recursive: true });
    const realMarker = path.join(home, "real-marker");
    fs.writeFileSync(realMarker, "hook_outputs");
    fs.symlinkSync(realMarker, path.join(linked, SPILL_MARKER_FILE));
    fs.writeFileSync(path.join(wrong, SPILL_MARKER_FILE), "something else");
    touch(path.join(linked, "old.txt"), 10 * 86_400_000);
    touch(path.join(wrong, "old.txt"), 10 * 86_400_000);
    expect(await pruneSpillFiles(base, { retentionMs: 1000 })).toBe(0);
  });

  it("keeps at most maxFilesPerSession newest files", async () => {
    const base = path.join(home, "hook_outputs");
    for (let i = 0; i < 5; i++) await spillIfOversized(`${i}`.repeat(50), { hermesHome: home, sessionId: "s", config: { maxChars: 10 } });
    const dir = path.join(base, "s");
    const files = fs.readdirSync(dir).filter((f) => f.endsWith(".txt"));
    files.forEach((f, i) => {
      const when = new Date(Date.now() - (i + 1) * 60_000);
      fs.utimesSync(path.join(dir, f), when, when);
    });
    expect(await pruneSpillFiles(base, { maxFilesPerSession: 2 })).toBe(3);
    expect(
      fs
        .readdirSync(dir)
        .filter((f) => f.endsWith(".txt"))
        .sort(),
    ).toEqual(files.slice(0, 2).sort());
  });

  it("returns 0 for a missing base", async () => {
    expect(await pruneSpillFiles(path.join(home, "missing"), { retentionMs: 0 })).toBe(0);
  });
});
