// Child process for the erasure tests: erases one user's turns from a profile's local vector store
// in steps, and is killed from outside while it runs. argv: <hermesHome> <userId>; reports over IPC.
import { VectorMemoryProvider } from "../vector-memory-provider.js";

const [hermesHome, userId] = process.argv.slice(2) as [string, string];

async function main(): Promise<void> {
  const provider = new VectorMemoryProvider({ env: {}, dimensions: 128 });
  await provider.initialize("erase-child", { hermesHome });
  process.send?.({ type: "erasing" });
  const erased = await provider.forgetWhere({ userId, kind: "turn" });
  await provider.shutdown();
  process.send?.({ type: "done", erased });
}

main().catch((error: unknown) => {
  process.send?.({ type: "error", message: String((error as Error)?.stack ?? error) });
  process.exitCode = 1;
});
