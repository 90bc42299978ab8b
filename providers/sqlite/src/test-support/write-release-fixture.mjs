// Writes `fixtures/release-0.1.0.db`: a memory database written by a released @hermes/memory-sqlite
// (0.1.0, schema v2) through its public API, which the migration tests open with the current code.
// `fixtures/schema-v4.db` was written the same way by the package at commit a3953ba (schema v4, the
// last before v5 stored each turn's previous-turn ids).
// Run from a checkout or install of that release:
//   node write-release-fixture.mjs <path to the release's dist/index.js> <output.db>
import fs from "node:fs";
import process from "node:process";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [distIndex, out] = process.argv.slice(2);
const { SqliteMemoryProvider } = await import(pathToFileURL(path.resolve(distIndex)).href);
const home = fs.mkdtempSync(path.join(os.tmpdir(), "fixture-home-"));
const file = path.join(home, "memory.db");
const provider = new SqliteMemoryProvider({ path: file });
await provider.initialize("fixture-session", { hermesHome: home, platform: "cli", userId: "u1" });
const date = (d) => ({ date: d });
const turns = [
  ["s1", "Caroline", "Where did you go hiking last weekend?", "1:56 pm on 8 May, 2023"],
  ["s1", "Melanie", "Yes, last Saturday! We went up to the old lighthouse.", "1:56 pm on 8 May, 2023"],
  ["s1", "Caroline", "That sounds lovely. Did you take the dog? \u{1F436}", "1:56 pm on 8 May, 2023"],
  ["s2", "Melanie", "I signed up for a pottery class on Thursdays.", "7:55 pm on 9 June, 2023"],
  ["s2", "Caroline", "Great, you always wanted to try that!", "7:55 pm on 9 June, 2023"],
  ["s2", "Melanie", "The teacher said my first bowl was " + "very ".repeat(60) + "uneven.", "7:55 pm on 9 June, 2023"],
];
for (const [sessionId, speaker, content, d] of turns) {
  provider.remember({ kind: "turn", sessionId, userId: "u1", content: `${speaker} said, "${content}"`, metadata: { speaker, ...date(d) } });
}
provider.remember({ kind: "fact", content: "The user prefers green tea", tags: ["pref"], userId: "u1" });
provider.syncTurn("What is my favourite drink?", "You told me you prefer green tea.", { sessionId: "s3" });
provider.syncTurn("And my dog's name?", "You have not told me yet.", { sessionId: "s3" });
await provider.onPreCompress(
  [
    { role: "user", content: "Remember that the billing service moved to Postgres." },
    { role: "assistant", content: "Noted: billing now runs on Postgres." },
  ],
  { requireCheckpoint: false },
);
await provider.flush();
await provider.shutdown();
fs.copyFileSync(file, out);
fs.rmSync(home, { recursive: true, force: true });
process.stdout.write(`wrote ${out}\n`);
