/**
 * Every acknowledged write stands even when the usearch index cannot replace a key's vector: a
 * seeded mix of remember, update, forget and erasure (a sequence that once made usearch refuse an
 * update's vector with "Duplicate keys not allowed") is read back exactly, before and after a restart.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { seededRandom } from "@hermes/test-support";
import { VectorMemoryProvider } from "../vector-memory-provider.js";

const dirs: string[] = [];
const providers: VectorMemoryProvider[] = [];
afterEach(async () => {
  for (const p of providers.splice(0)) await p.shutdown();
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

async function openProvider(home: string): Promise<VectorMemoryProvider> {
  const provider = new VectorMemoryProvider({ env: {}, hybrid: true });
  providers.push(provider);
  await provider.initialize("s1", { hermesHome: home });
  return provider;
}

describe("replacing a row's vector in the index", () => {
  it.each([46, 7, 1234])("keeps every acknowledged remember, update, forget and erasure (seed %i)", async (seed) => {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-index-replace-"));
    dirs.push(home);
    let provider = await openProvider(home);
    const next = seededRandom(seed);
    const live = new Map<string, { content: string; session: string }>();
    let n = 0;
    const words = ["harbour", "storm", "gull", "rope", "lantern", "tide", "shell", "anchor"];
    const remember = async (): Promise<void> => {
      const session = next() < 0.5 ? "evening" : "morning";
      const extra = Array.from({ length: 3 }, () => words[Math.floor(next() * words.length)]).join(" ");
      const content = `lighthouse keeper note ${n++} ${extra}`;
      const id = provider.remember({ content, kind: "turn", sessionId: session });
      await provider.flush();
      live.set(id, { content, session });
    };
    const pick = (): string => [...live.keys()][Math.floor(next() * live.size)]!;
    for (let i = 0; i < 60; i++) await remember();
    for (let step = 0; step < 40; step++) {
      const roll = next();
      if (roll < 0.25) await remember();
      else if (roll < 0.6) {
        const id = pick();
        const content = `lighthouse keeper note ${n++} rewritten storm storm`;
        expect(await provider.update(id, { content }), `update at step ${step}`).toBe(true);
        live.set(id, { ...live.get(id)!, content });
      } else if (roll < 0.85) {
        const id = pick();
        expect(await provider.forget(id)).toBe(true);
        live.delete(id);
      } else {
        const session = next() < 0.5 ? "evening" : "morning";
        await provider.forgetWhere({ sessionId: session, confirmAll: true });
        for (const [id, item] of live) if (item.session === session) live.delete(id);
        while (live.size < 40) await remember();
      }
    }
    await provider.flush();
    const readBack = async (): Promise<void> => {
      expect((await provider.stats()).items).toBe(live.size);
      for (const [id, item] of live) expect((await provider.get(id))?.content, id).toBe(item.content);
    };
    await readBack();
    await provider.shutdown();
    providers.splice(providers.indexOf(provider), 1);
    provider = await openProvider(home);
    await readBack();
  });
});
