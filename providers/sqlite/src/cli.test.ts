import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Command } from "commander";
import type { ProviderCliIo } from "@hermes/memory-core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { registerCli } from "./cli.js";
import { exportCommand, importCommand, withProvider, type CommandContext } from "./commands.js";

let home: string;
let ctx: CommandContext;

beforeEach(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-cli-hostile-"));
  ctx = { hermesHome: home, providerName: "sqlite", io: { stdout: () => {}, stderr: () => {}, isTTY: false } };
  await withProvider(ctx, (p) => {
    p.remember({ content: "Alice prefers green tea in the morning", kind: "fact", tags: ["pref"] });
    p.remember({ content: "We discussed the Kubernetes migration", kind: "turn", sessionId: "s1" });
    p.remember({ content: "Checkpoint: billing moved to Postgres", kind: "checkpoint", sessionId: "s1" });
  });
});
afterEach(() => {
  fs.rmSync(home, { recursive: true, force: true });
});

/** Runs `sqlite <args>` as the hermes-memory host does: its io writes text exactly as given. */
async function runHosted(args: string[]): Promise<{ out: string; err: string; exitCode: number }> {
  const writes = { out: "", err: "" };
  const io: ProviderCliIo = { stdout: (t) => void (writes.out += t), stderr: (t) => void (writes.err += t), isTTY: false };
  const root = new Command("hermes-memory").exitOverride();
  registerCli(root.command("sqlite"), { hermesHome: home, providerName: "sqlite", io });
  const previous = process.exitCode;
  process.exitCode = 0;
  try {
    await root.parseAsync(["node", "hermes-memory", "sqlite", ...args]);
    return { ...writes, exitCode: Number(process.exitCode ?? 0) };
  } finally {
    process.exitCode = previous;
  }
}

describe("sqlite CLI through the host's io", () => {
  it("export to stdout is JSON Lines (one record per line), and text output ends with a newline", async () => {
    const exported = await runHosted(["export"]);
    expect(exported.exitCode).toBe(0);
    const lines = exported.out.split("\n");
    expect(lines.pop()).toBe("");
    expect(lines.map((l) => JSON.parse(l).content)).toEqual([
      "Alice prefers green tea in the morning",
      "We discussed the Kubernetes migration",
      "Checkpoint: billing moved to Postgres",
    ]);
    const stats = await runHosted(["stats"]);
    expect(stats.out).toMatch(/^database: .*\nitems: {4}3 .*\nsessions: 1\nsize: .*\n$/);
    const json = await runHosted(["stats", "--json"]);
    expect(json.out.endsWith("}\n")).toBe(true);
  });

  it("a failure goes to the host's stderr with its newline and exits 1", async () => {
    const result = await runHosted(["search", "tea", "--limit", "-3"]);
    expect(result.exitCode).toBe(1);
    expect(result.out).toBe("");
    expect(result.err).toBe("hermes-memory sqlite: --limit must be a positive integer (got -3).\n");
  });

  it("import exits 1 when it refused lines, after importing the valid ones", async () => {
    const file = path.join(home, "mixed.jsonl");
    fs.writeFileSync(file, '{"content":"valid hand-written fact"}\n\u0000\u0001 binary junk\n[1,2]\n');
    const result = await runHosted(["import", file]);
    expect(result.exitCode).toBe(1);
    expect(result.out).toMatch(
      /^Imported 1 item\(s\), skipped 0 already present, 2 invalid\.\nline 2: not valid JSON\nline 3: not a JSON object\n$/,
    );
    const again = await runHosted(["import", file, "--json"]);
    expect(again.exitCode).toBe(1);
    expect(JSON.parse(again.out)).toMatchObject({ imported: 0, skipped: 1, invalid: 2 });
    const clean = path.join(home, "clean.jsonl");
    fs.writeFileSync(clean, '{"content":"another valid fact"}\n');
    expect((await runHosted(["import", clean])).exitCode).toBe(0);
  });
});

describe("sqlite import: records with fields of the wrong type are refused, not mangled", () => {
  it("refuses each such line with the field and reason, stores the valid lines as given", async () => {
    const file = path.join(home, "typed.jsonl");
    const lines = [
      { content: "tags as text", tags: "work" },
      { content: "tags with a number and an object", tags: [1, { a: 1 }] },
      { content: "metadata as text", metadata: "project apollo" },
      { content: "expiry that is no time", expiresAt: "next tuesday-ish" },
      { content: "creation that is no time", createdAt: "yesterday-ish" },
      { content: "session as a number", kind: "turn", sessionId: 5 },
      { content: "speaker as a list", kind: "turn", speaker: ["Alice"] },
      { content: "valid with epoch-ms expiry", tags: ["ok"], expiresAt: Date.parse("2999-01-01T00:00:00.000Z") },
    ];
    fs.writeFileSync(file, lines.map((l) => JSON.stringify(l)).join("\n") + "\n");
    const result = await importCommand(ctx, file, { json: true });
    expect(result).toMatchObject({ imported: 1, invalid: 7 });
    expect(result.errors).toEqual([
      expect.stringMatching(/^line 1: tags must be a list of non-empty text/),
      expect.stringMatching(/^line 2: tags must be a list of non-empty text/),
      expect.stringMatching(/^line 3: metadata must be an object/),
      expect.stringMatching(/^line 4: expiresAt must be an ISO 8601 time/),
      expect.stringMatching(/^line 5: createdAt must be an ISO 8601 time/),
      expect.stringMatching(/^line 6: sessionId must be text/),
      expect.stringMatching(/^line 7: speaker must be text/),
    ]);
    const out: string[] = [];
    await exportCommand({ ...ctx, io: { stdout: (t) => out.push(t), stderr: () => {}, isTTY: false } }, undefined);
    const records = out.map((l) => JSON.parse(l));
    expect(records).toHaveLength(4);
    expect(records[3]).toMatchObject({ content: "valid with epoch-ms expiry", tags: ["ok"], expiresAt: "2999-01-01T00:00:00.000Z" });
  });
});

describe("sqlite import and export: paths that are not files", () => {
  const hasMkfifo = spawnSync("mkfifo", ["--version"]).status === 0;

  it("import refuses a device that never ends (/dev/zero) and a directory with INVALID_ARGUMENT", async () => {
    if (fs.existsSync("/dev/zero")) {
      await expect(importCommand(ctx, "/dev/zero")).rejects.toMatchObject({
        code: "INVALID_ARGUMENT",
        message: expect.stringMatching(/^Cannot read \/dev\/zero: it is not a regular file/),
      });
    }
    await expect(importCommand(ctx, home)).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringMatching(/it is a directory\. Pass a JSONL file/),
    });
  });

  it("export to a directory or into a missing folder is refused before writing, and leaves no temporary file", async () => {
    const dir = path.join(home, "exports");
    fs.mkdirSync(dir);
    await expect(exportCommand(ctx, dir)).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringMatching(/it is a directory/),
    });
    expect(fs.readdirSync(home).filter((n) => n.endsWith(".tmp"))).toEqual([]);
    const missing = path.join(home, "no-such-folder", "dump.jsonl");
    await expect(exportCommand(ctx, missing)).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringMatching(/the folder .*no-such-folder does not exist/),
    });
    expect(fs.existsSync(path.dirname(missing))).toBe(false);
  });

  it.skipIf(!hasMkfifo)("export to a named pipe is refused and the pipe is left a pipe (not replaced by a file)", async () => {
    const fifo = path.join(home, "pipe");
    expect(spawnSync("mkfifo", [fifo]).status).toBe(0);
    await expect(exportCommand(ctx, fifo)).rejects.toMatchObject({
      code: "INVALID_ARGUMENT",
      message: expect.stringMatching(/not a regular file/),
    });
    expect(fs.statSync(fifo).isFIFO()).toBe(true);
  });
});
