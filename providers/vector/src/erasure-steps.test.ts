import { fork } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { ticksDuring, until } from "@hermes/test-support";
import { VectorMemoryProvider, type ExportedItem } from "./vector-memory-provider.js";

const CHILD = fileURLToPath(new URL("./test-support/erase-child.ts", import.meta.url));

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

/** Sessions of 20 turns, every other one user "gone"'s; each of "gone"'s sessions has a checkpoint copy of its first turn (under the same user, so in the same namespace). */
function* exported(sessions: number): Generator<ExportedItem> {
  for (let s = 0; s < sessions; s++) {
    const user = s % 2 === 0 ? "gone" : "kept";
    for (let t = 0; t < 20; t++) {
      const i = s * 20 + t;
      yield {
        id: `t${i}`,
        namespace: "",
        content: `User: note w${i}x on topic ${i % 13}\nAssistant: ok`,
        metadata: { kind: "turn", session_id: `s${s}`, user_id: user },
      };
    }
    if (user === "gone")
      yield {
        id: `c${s}`,
        namespace: "",
        content: `User: note w${s * 20}x on topic ${(s * 20) % 13}`,
        metadata: { kind: "checkpoint", session_id: `s${s}`, user_id: user },
      };
  }
}

describe("vector erasure and import in steps", () => {
  it("serve timers while a large file is imported and a user's items are erased, and erase exactly the scope", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-steps-"));
    cleanups.push(() => fs.rmSync(home, { recursive: true, force: true }));
    const provider = new VectorMemoryProvider({ env: {}, dimensions: 128 });
    await provider.initialize("s1", { hermesHome: home });
    cleanups.push(() => provider.shutdown().catch(() => undefined));
    const imported = await ticksDuring(() => provider.importItems(exported(40)));
    expect(imported.value).toBe(820);
    // One synchronous run would have let no timer fire before it returned.
    expect(imported.ticks).toBeGreaterThan(3);
    await provider.flush();
    const erased = await ticksDuring(() => provider.forgetWhere({ userId: "gone" }));
    expect(erased.value).toBe(420);
    expect(erased.ticks).toBeGreaterThan(3);
    expect((await provider.stats()).items).toBe(400);
    for (const word of ["w0x", "w47x", "w385x"]) {
      expect((await provider.search(word, { limit: 50, userId: "gone" })).filter((h) => h.content.includes(word))).toEqual([]);
    }
    expect((await provider.search("w21x", { limit: 50, userId: "kept" })).filter((h) => h.content.includes("w21x"))).toHaveLength(1);
  });

  it("killed with SIGKILL between steps leaves no erased turn's checkpoint copy behind, and running it again erases the rest", async () => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-kill-"));
    cleanups.push(() => fs.rmSync(home, { recursive: true, force: true }));
    {
      const provider = new VectorMemoryProvider({ env: {}, dimensions: 128 });
      await provider.initialize("s1", { hermesHome: home });
      await provider.importItems(exported(60));
      await provider.shutdown();
    }
    const reader = new Database(path.join(home, "memory", "vector", "sidecar.sqlite"), { readonly: true });
    const turnsLeft = (): number =>
      Number(
        reader
          .prepare(
            `SELECT COUNT(*) FROM records WHERE json_extract(metadata, '$.user_id') = 'gone' AND json_extract(metadata, '$.kind') = 'turn'`,
          )
          .pluck()
          .get(),
      );
    const before = turnsLeft();
    const child = fork(CHILD, [home, "gone"], { execArgv: ["--import", "tsx"], stdio: ["ignore", "ignore", "pipe", "ipc"] });
    let stderr = "";
    child.stderr?.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<void>((resolve) => child.on("exit", () => resolve()));
    let partly = -1;
    try {
      await until(() => {
        const now = turnsLeft();
        if (now < before && now > 0) partly = now;
        return partly >= 0 || child.exitCode !== null;
      }, 60_000);
      child.kill("SIGKILL");
      await exited;
    } finally {
      reader.close();
    }
    expect(partly, `the child ended before it was killed: ${stderr}`).toBeGreaterThan(0);
    const provider = new VectorMemoryProvider({ env: {}, dimensions: 128 });
    await provider.initialize("s1", { hermesHome: home });
    cleanups.push(() => provider.shutdown().catch(() => undefined));
    // A checkpoint copy is left only where its turn is: the scope (turns) does not match copies,
    // so a copy whose turn was erased would never be erased by running the erasure again.
    for (let s = 0; s < 60; s += 2) {
      const copy = await provider.get(`c${s}`);
      if (copy) expect(await provider.get(`t${s * 20}`), `copy c${s} outlived its turn`).not.toBeNull();
    }
    const left = (await provider.countWhere({ userId: "gone", kind: "turn" })) as number;
    expect(left).toBeGreaterThan(0);
    let copies = 0;
    for (let s = 0; s < 60; s += 2) if (await provider.get(`c${s}`)) copies++;
    expect(await provider.forgetWhere({ userId: "gone", kind: "turn" })).toBe(left + copies);
    expect(await provider.countWhere({ userId: "gone" })).toBe(0);
    expect((await provider.stats()).items).toBe(600);
  });
});
