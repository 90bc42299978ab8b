import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ticksDuring } from "@hermes/test-support";
import { forgetCommand, importCommand, withProvider, type CommandContext } from "./commands.js";

let home: string;
let ctx: CommandContext;
const out: string[] = [];

beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), "sqlite-import-steps-"));
  out.length = 0;
  ctx = { hermesHome: home, providerName: "sqlite", io: { stdout: (t) => out.push(t), stderr: (t) => out.push(t), isTTY: false } };
});
afterEach(() => {
  fs.rmSync(home, { recursive: true, force: true });
});

describe("import and erase commands in steps", () => {
  it("serve timers while a large file is imported and a user's items are erased; every record is stored once", async () => {
    const file = path.join(home, "in.jsonl");
    const lines: string[] = [];
    for (let i = 0; i < 3000; i++) {
      const record = {
        kind: "turn",
        content: `User: line ${i} says k${i}q\nAssistant: ok`,
        sessionId: `s${Math.floor(i / 40)}`,
        userId: i % 2 ? "a" : "b",
      };
      lines.push(JSON.stringify({ ...record, createdAt: new Date(1_700_000_000_000 + i * 1000).toISOString() }));
    }
    fs.writeFileSync(file, `${lines.join("\n")}\n`);
    // A store that already holds turns: their digests are read too.
    await withProvider(ctx, (p) => {
      p.remember({ content: "User: an older turn\nAssistant: ok", kind: "turn", sessionId: "old" });
    });
    const imported = await ticksDuring(() => importCommand(ctx, file, { json: true }));
    expect(imported.value).toMatchObject({ imported: 3000, skipped: 0, invalid: 0 });
    // One synchronous run would have let no timer fire before it returned.
    expect(imported.ticks).toBeGreaterThan(3);
    const again = await ticksDuring(() => importCommand(ctx, file, { json: true }));
    expect(again.value).toMatchObject({ imported: 0, skipped: 3000, invalid: 0 });
    expect(again.ticks).toBeGreaterThan(3);
    const erased = await ticksDuring(() => forgetCommand(ctx, undefined, { user: "a", yes: true, json: true }));
    expect(erased.value).toMatchObject({ erased: 1500, forgotten: true });
    expect(erased.ticks).toBeGreaterThan(3);
    await withProvider(ctx, (p) => {
      expect(p.stats().items).toBe(1501);
      expect(p.memoryStore!.doctor()).toMatchObject({ ok: true, ftsConsistent: true });
    });
  });
});
