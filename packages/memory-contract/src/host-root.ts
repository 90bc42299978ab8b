import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/** A throwaway "host project" that depends on one provider package. */
export interface HostRoot {
  /** Directory holding the host package.json and node_modules. */
  root: string;
  /** Remove the host directory (the provider package itself is untouched). */
  dispose(): void;
}

/**
 * Build a host project whose package.json depends on `packageName` and whose
 * `node_modules/<packageName>` links to `packageDir`, so core's package discovery (direct
 * dependencies of a package root only) finds the provider exactly as in a real install.
 */
export function createHostRoot(packageName: string, packageDir: string): HostRoot {
  const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "hermes-contract-host-")));
  fs.writeFileSync(
    path.join(root, "package.json"),
    JSON.stringify({ name: "hermes-contract-host", private: true, type: "module", dependencies: { [packageName]: "*" } }, null, 2),
  );
  const link = path.join(root, "node_modules", ...packageName.split("/"));
  fs.mkdirSync(path.dirname(link), { recursive: true });
  // "junction" needs no privileges on Windows and is ignored elsewhere.
  fs.symlinkSync(packageDir, link, "junction");
  return { root, dispose: () => fs.rmSync(root, { recursive: true, force: true }) };
}
