// Child process for the erasure tests: erases one user's items from a database file in steps,
// and is killed from outside while it runs. argv: <dbPath> <userId>; reports over IPC.
import { SqliteMemoryProvider } from "../sqlite-memory-provider.js";

const [dbPath, userId] = process.argv.slice(2) as [string, string];

async function main(): Promise<void> {
  const provider = new SqliteMemoryProvider({ path: dbPath });
  await provider.initialize("erase-child", { hermesHome: process.cwd() });
  process.send?.({ type: "erasing" });
  const erased = await provider.forgetWhere({ userId });
  await provider.shutdown();
  process.send?.({ type: "done", erased });
}

main().catch((error: unknown) => {
  process.send?.({ type: "error", message: String((error as Error)?.stack ?? error) });
  process.exitCode = 1;
});
