// Module customization hooks (run by Node on the hooks thread, registered by plugin-resolution.ts).
// Rule: a folder plugin (bundled, $HERMES_HOME/plugins/<name>, opted-in project folder) that
// imports `@hermes/memory-core` gets the host's own copy — one MemoryProvider class, one profile
// scope — unless the folder ships its own copy inside itself (then that copy is kept). Everything
// else resolves exactly as Node would.
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { MessagePort } from "node:worker_threads";

interface HookData {
  port: MessagePort;
  /** URL of a module inside the host's core package, used as the parent for self-reference. */
  coreParentUrl: string;
}

interface ResolveContext {
  parentURL?: string;
  conditions?: string[];
  importAttributes?: Record<string, string>;
}
interface ResolveResult {
  url: string;
  format?: string | null;
  shortCircuit?: boolean;
}
type NextResolve = (specifier: string, context?: ResolveContext) => Promise<ResolveResult>;

const CORE = "@hermes/memory-core";
const pluginDirs = new Set<string>();
let coreParentUrl = "";

function inside(dir: string, file: string): boolean {
  const rel = path.relative(dir, file);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

function pluginDirOf(parentUrl: string | undefined): string | null {
  if (!parentUrl?.startsWith("file:")) return null;
  const file = fileURLToPath(parentUrl);
  for (const dir of pluginDirs) if (inside(dir, file)) return dir;
  return null;
}

export function initialize(data: HookData): void {
  coreParentUrl = data.coreParentUrl;
  data.port.on("message", (message: { id: number; dirs: string[] }) => {
    for (const dir of message.dirs) pluginDirs.add(dir);
    data.port.postMessage({ id: message.id });
  });
  // The port must not keep the host process alive.
  data.port.unref();
}

export async function resolve(specifier: string, context: ResolveContext, nextResolve: NextResolve): Promise<ResolveResult> {
  if (specifier !== CORE && !specifier.startsWith(`${CORE}/`)) return nextResolve(specifier, context);
  const dir = pluginDirOf(context.parentURL);
  if (dir === null) return nextResolve(specifier, context);
  try {
    const own = await nextResolve(specifier, context);
    // A copy inside the plugin folder is the plugin's own (it bundled it); keep it.
    if (own.url.startsWith("file:") && inside(dir, fileURLToPath(own.url))) return own;
  } catch (error) {
    if ((error as { code?: string }).code !== "ERR_MODULE_NOT_FOUND") throw error;
  }
  return nextResolve(specifier, { ...context, parentURL: coreParentUrl });
}
