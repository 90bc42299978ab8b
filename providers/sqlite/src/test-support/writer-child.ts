// Child process for the reliability tests: sustained syncTurn traffic against one database file.
// argv: <dbPath> <label> <mode: "forever" | count> ; reports progress over IPC.
import { SqliteMemoryProvider } from "../sqlite-memory-provider.js";

const [dbPath, label, mode] = process.argv.slice(2) as [string, string, string];
const total = mode === "forever" ? Infinity : Number(mode);

async function main(): Promise<void> {
  const provider = new SqliteMemoryProvider({ path: dbPath, flushIntervalMs: 1, writeBatchSize: 16 });
  await provider.initialize(label, { hermesHome: process.cwd() });
  process.send?.({ type: "ready" });
  let written = 0;
  while (written < total) {
    for (let i = 0; i < 25 && written < total; i++, written++) {
      provider.syncTurn(`${label} question ${written} about topic${written % 97}`, `answer ${written}`, { sessionId: label });
    }
    await provider.flush();
    process.send?.({ type: "flushed", upTo: written });
    await new Promise((resolve) => setImmediate(resolve));
  }
  await provider.shutdown();
  process.send?.({ type: "done", written });
}

main().catch((error: unknown) => {
  process.send?.({ type: "error", message: String((error as Error)?.stack ?? error), code: (error as { code?: string })?.code });
  process.exitCode = 1;
});
