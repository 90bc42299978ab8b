import fs from "node:fs";
import { register } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { MessageChannel, type MessagePort } from "node:worker_threads";

// Folder plugins have no node_modules of their own, so a plain `import "@hermes/memory-core"`
// from $HERMES_HOME/plugins/<name>/index.js would not resolve (or would find an unrelated copy
// with a separate MemoryProvider class and profile scope). A resolve hook, registered once and
// lazily, points such imports at this very copy of core. Package plugins resolve as usual.

let port: MessagePort | null = null;
let unsupported = false;
let nextId = 0;
const ACK_TIMEOUT_MS = 5_000;
const known = new Set<string>();
const pending = new Map<number, () => void>();

function ensureRegistered(): MessagePort | null {
  if (port || unsupported) return port;
  const hooks = new URL("./plugin-resolve-hooks.js", import.meta.url);
  // Only the compiled package ships the hooks module (running from TypeScript sources, e.g. under
  // a test runner, there is none): then folder plugins resolve the way Node resolves them.
  if (typeof register !== "function" || !fs.existsSync(fileURLToPath(hooks))) {
    unsupported = true;
    return null;
  }
  const channel = new MessageChannel();
  register(hooks, {
    parentURL: import.meta.url,
    data: { port: channel.port2, coreParentUrl: import.meta.url },
    transferList: [channel.port2],
  });
  channel.port1.on("message", (message: { id: number }) => {
    pending.get(message.id)?.();
    pending.delete(message.id);
    if (pending.size === 0) channel.port1.unref();
  });
  channel.port1.unref();
  port = channel.port1;
  return port;
}

/**
 * Make `import "@hermes/memory-core"` (and its subpaths) from files inside `dir` resolve to the
 * host's own core unless `dir` holds its own copy. Resolves once the resolve hook knows `dir`, so
 * the import that follows is covered.
 */
export async function allowCoreImportsFrom(dir: string): Promise<void> {
  const resolved = path.resolve(dir);
  if (known.has(resolved)) return;
  const channel = ensureRegistered();
  if (!channel) return;
  const id = ++nextId;
  const acknowledged = await new Promise<boolean>((resolve) => {
    // A hooks thread that never answers must not hang loading: after ACK_TIMEOUT_MS the import
    // goes ahead (and fails with Node's own "Cannot find package" if the hook is really missing).
    const timer = setTimeout(() => {
      pending.delete(id);
      resolve(false);
    }, ACK_TIMEOUT_MS);
    pending.set(id, () => {
      clearTimeout(timer);
      resolve(true);
    });
    // Keep the process alive only while waiting for the hooks thread's answer.
    channel.ref();
    channel.postMessage({ id, dirs: [resolved] });
  });
  if (pending.size === 0) channel.unref();
  if (acknowledged) known.add(resolved);
}
