// Writes `fixtures/schema-v5.db`: a memory database written through the public API by this package
// at schema v5 (commit 02e645f, the last before v6 derived each turn's context from the ids of its
// previous turns), with turns forgotten, edited and expired after they were written, so the turns
// after them hold re-pointed context. The v6 migration tests open it with the current code.
// Run from a build of that commit:
//   node write-v5-fixture.mjs <path to its providers/sqlite/dist/index.js> <output.db>
import fs from "node:fs";
import process from "node:process";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { setTimeout as sleep } from "node:timers/promises";

const [distIndex, out] = process.argv.slice(2);
const { SqliteMemoryProvider } = await import(pathToFileURL(path.resolve(distIndex)).href);
const home = fs.mkdtempSync(path.join(os.tmpdir(), "fixture-home-"));
const file = path.join(home, "memory.db");
const provider = new SqliteMemoryProvider({ path: file });
await provider.initialize("fixture-session", { hermesHome: home, platform: "cli", userId: "u1" });

// A deterministic generator (mulberry32), so the fixture can be written again identically.
let seed = 5;
const random = () => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = (list) => list[Math.floor(random() * list.length)];
const words = [
  "lighthouse",
  "pottery",
  "hiking",
  "garden",
  "violin",
  "harbour",
  "station",
  "bakery",
  "museum",
  "river",
  "painting",
  "marathon",
  "camping",
  "recipe",
  "guitar",
  "library",
  "bicycle",
  "festival",
  "ferry",
  "mountain",
  "sunset",
  "puppy",
  "concert",
  "school",
];
const fillers = [
  "we",
  "went",
  "to",
  "the",
  "last",
  "weekend",
  "and",
  "it",
  "was",
  "really",
  "fun",
  "with",
  "my",
  "friends",
  "family",
  "yesterday",
  "again",
  "soon",
];
const speakers = ["Caroline", "Melanie", "Jon", "Gina"];
const sentence = () => {
  const n = 4 + Math.floor(random() * 14);
  const parts = [];
  for (let i = 0; i < n; i++) parts.push(random() < 0.3 ? pick(words) : pick(fillers));
  return parts.join(" ") + (random() < 0.35 ? "?" : ".");
};
const ids = [];
for (let s = 1; s <= 6; s++) {
  const date = `${1 + s}:15 pm on ${s + 3} May, 2023`;
  const turns = 14 + Math.floor(random() * 10);
  for (let t = 0; t < turns; t++) {
    const speaker = speakers[(s + t) % 2 === 0 ? s % 4 : (s + 1) % 4];
    const long = random() < 0.1 ? " " + "very ".repeat(40) + pick(words) : "";
    const id = provider.remember({
      kind: "turn",
      sessionId: `s${s}`,
      userId: s % 3 === 0 ? "u2" : "u1",
      content: `${speaker} said, "${sentence()}${long}"`,
      metadata: { speaker, date },
    });
    ids.push(id);
  }
}
provider.remember({ kind: "fact", content: "The user prefers green tea and hiking by the harbour", tags: ["pref"], userId: "u1" });
provider.remember({ kind: "fact", content: "Melanie's puppy is called Biscuit", userId: "u1" });
provider.syncTurn("What is my favourite drink?", "You told me you prefer green tea.", { sessionId: "s7" });
provider.syncTurn("And my dog's name? The puppy from the festival.", "You have not told me yet.", { sessionId: "s7" });
await provider.flush();
// Edits and erasures after the fact: the turns after them were re-pointed by the v5 triggers.
for (const i of [3, 20, 21, 45, 70, 71, 72, 100]) provider.forget(ids[i]);
for (const i of [5, 33, 60, 90]) provider.update(ids[i], { content: `Edited: ${sentence()} ${pick(words)} ${pick(words)}` });
provider.forgetWhere({ sessionId: "s6", userId: "u2" });
provider.remember({
  kind: "turn",
  sessionId: "s2",
  userId: "u1",
  content: 'Gina said, "this one expires before anyone reads it about the ferry"',
  metadata: { speaker: "Gina" },
  expiresAt: new Date(Date.now() + 1500).toISOString(),
});
provider.remember({
  kind: "turn",
  sessionId: "s2",
  userId: "u1",
  content: 'Jon said, "and the ferry was late again"',
  metadata: { speaker: "Jon" },
});
await sleep(1600);
provider.purgeExpired();
await provider.flush();
await provider.shutdown();
fs.copyFileSync(file, out);
fs.rmSync(home, { recursive: true, force: true });
process.stdout.write(`wrote ${out}\n`);
