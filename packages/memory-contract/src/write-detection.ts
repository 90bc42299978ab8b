import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { FsWriteWatch } from "./fs-write-watch.js";
import { providerCallScope } from "./provider-call-scope.js";
import { isInside, type Sandbox } from "./sandbox.js";

/** Render sandbox paths the way a provider author recognises them (`~/…`, `./…`). */
export function describeSandboxPath(sandbox: Sandbox, p: string): string {
  if (p === sandbox.home || p.startsWith(sandbox.home + path.sep)) return `~/${path.relative(sandbox.home, p)}`;
  if (p === sandbox.workDir || p.startsWith(sandbox.workDir + path.sep)) return `./${path.relative(sandbox.workDir, p)} (cwd)`;
  return p;
}

/**
 * Paths a provider call wrote outside `hermesHome`: everything changed in the sandbox snapshot,
 * plus `fs` writes seen by the watch that landed outside the OS temp dir (temp files are fine)
 * or inside the sandbox.
 */
export function writesOutside(sandbox: Sandbox, hermesHome: string, changed: readonly string[], watched: Iterable<string>): string[] {
  const tmp = fs.realpathSync(os.tmpdir());
  const outside = new Set(changed.filter((p) => !isInside(hermesHome, p)));
  for (const p of watched) {
    if (isInside(hermesHome, p)) continue;
    if (isInside(sandbox.root, p) || !isInside(tmp, p)) outside.add(p);
  }
  return [...outside].sort();
}

/** Watch `fs` writes made by calls of the instance labelled `label`. */
export function watchWritesOf(label: string): FsWriteWatch {
  return new FsWriteWatch(() => providerCallScope.getStore()?.label === label);
}
