// Child process for the two-process test: one PineconeRemoteMemory on its own $HERMES_HOME,
// driven by JSON lines on stdin ({"op": "search", "args": [...]}) and answering one JSON line
// per request on stdout ({"ok": true, "result": ...} or {"ok": false, "code": ..., "message": ...}).
import path from "node:path";
import readline from "node:readline";
import { HermesMemoryError } from "@hermes/memory-core";
import { PineconeRemoteMemory } from "../pinecone/pinecone-remote-store.js";
import { ConceptEmbedder } from "./concept-embedder.js";

const home = process.env.HERMES_HOME!;
const memory = PineconeRemoteMemory.open({
  apiKey: "test-key",
  indexName: "shared",
  controllerHostUrl: process.env.PINECONE_FAKE_URL!,
  namespace: "team-profile",
  embedder: new ConceptEmbedder(),
  outboxFile: path.join(home, "memory", "vector", "remote-outbox.sqlite"),
  retry: { maxRetries: 1, baseDelayMs: 5, maxDelayMs: 10 },
});
const ops: Record<string, (...args: never[]) => unknown> = {
  remember: (item: never) => memory.remember(item),
  flush: () => memory.flush(),
  search: (query: never, options: never) => memory.search(query, options),
  get: (id: never) => memory.get(id),
  forgetWhere: (scope: never) => memory.forgetWhere(scope),
  pending: () => memory.pendingWrites,
  close: () => memory.close(),
};
for await (const line of readline.createInterface({ input: process.stdin })) {
  const { op, args } = JSON.parse(line) as { op: string; args: never[] };
  try {
    const result = await ops[op]!(...args);
    process.stdout.write(`${JSON.stringify({ ok: true, result: result ?? null })}\n`);
  } catch (error) {
    const code = error instanceof HermesMemoryError ? error.code : "UNTYPED";
    process.stdout.write(`${JSON.stringify({ ok: false, code, message: (error as Error).message })}\n`);
  }
}
