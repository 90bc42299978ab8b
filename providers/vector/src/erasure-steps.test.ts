import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { VectorMemoryProvider } from "./vector-memory-provider.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

/** Run `work` and count how often a zero-delay timer fired before it settled. */
async function ticksDuring<T>(work: () => Promise<T>): Promise<{ value: T; ticks: number }> {
  let ticks = 0;
  let running = true;
  const tick = (): void => {
    ticks++;
    if (running) setTimeout(tick, 0);
  };
  setTimeout(tick, 0);
  try {
    return { value: await work(), ticks };
  } finally {
    running = false;
  }
}

/** Sessions of 20 turns, every other one user "gone"'s; each of "gone"'s sessions has a checkpoint copy of its first turn (under the same user, so in the same namespace). */
function* exported(sessions: number): Generator<{ id: string; content: string; metadata: Record<string, unknown> }> {
  for (let s = 0; s < sessions; s++) {
    const user = s % 2 === 0 ? "gone" : "kept";
    for (let t = 0; t < 20; t++) {
      const i = s * 20 + t;
      yield {
        id: `t${i}`,
        content: `User: note w${i}x on topic ${i % 13}\nAssistant: ok`,
        metadata: { kind: "turn", session_id: `s${s}`, user_id: user },
      };
    }
    if (user === "gone")
      yield {
        id: `c${s}`,
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
});
