import fs from "node:fs";
import path from "node:path";
import { CLI_DIR } from "./cli-harness.js";

/** The CLI's own dependencies, linked from this workspace into a copied installation. */
const CLI_DEPENDENCIES = ["@clack/prompts", "@hermes/memory-mcp", "commander", "picocolors"];

/** A package folder: its built files and package.json copied, its node_modules linked. */
function copyPackage(from: string, to: string): void {
  fs.mkdirSync(to, { recursive: true });
  fs.cpSync(path.join(from, "dist"), path.join(to, "dist"), { recursive: true });
  fs.copyFileSync(path.join(from, "package.json"), path.join(to, "package.json"));
}

function link(target: string, at: string): void {
  fs.mkdirSync(path.dirname(at), { recursive: true });
  fs.symlinkSync(fs.realpathSync(target), at, "dir");
}

/**
 * The built CLI installed as npm lays it out, with real copies of the CLI and core (discovery and
 * the install hints go by core's real path) and links to the other dependencies:
 * - `global`: `<root>/prefix/lib/node_modules/@hermes/memory-cli`, core inside its node_modules
 *   (`npm install -g --prefix <root>/prefix @hermes/memory-cli`);
 * - `project`: `<root>/app/node_modules/@hermes/memory-cli`, core hoisted beside it, `<root>/app`
 *   a project depending on the CLI.
 * Returns the CLI's `bin.js`, the global prefix or project folder, and where core is.
 */
export function installCliCopy(root: string, layout: "global" | "project"): { bin: string; location: string; coreDir: string } {
  const location = path.join(root, layout === "global" ? "prefix" : "app");
  const modules = layout === "global" ? path.join(location, "lib", "node_modules") : path.join(location, "node_modules");
  if (layout === "project") {
    fs.mkdirSync(location, { recursive: true });
    fs.writeFileSync(
      path.join(location, "package.json"),
      JSON.stringify({ name: "app", private: true, dependencies: { "@hermes/memory-cli": "*" } }, null, 2),
    );
  }
  const cliDir = path.join(modules, "@hermes", "memory-cli");
  copyPackage(CLI_DIR, cliDir);
  for (const dependency of CLI_DEPENDENCIES)
    link(path.join(CLI_DIR, "node_modules", dependency), path.join(cliDir, "node_modules", dependency));
  const workspaceCore = fs.realpathSync(path.join(CLI_DIR, "node_modules", "@hermes", "memory-core"));
  const coreDir =
    layout === "global" ? path.join(cliDir, "node_modules", "@hermes", "memory-core") : path.join(modules, "@hermes", "memory-core");
  copyPackage(workspaceCore, coreDir);
  // Core's own dependencies (yaml, fs-ext), resolved through one link.
  link(path.join(workspaceCore, "node_modules"), path.join(coreDir, "node_modules"));
  return { bin: path.join(cliDir, "dist", "bin.js"), location, coreDir };
}

/**
 * `@hermes/memory-sqlite` installed in the project `project` as `npm install --ignore-scripts`
 * leaves it: the provider's built files, and better-sqlite3 without its built addon (what
 * `npm install-scripts approve` or a rebuild would add), so `isAvailable()` is false and
 * `initialize()` fails with `NATIVE_MODULE_MISSING`. Core and the kit are this workspace's (core
 * the very copy the CLI under test uses). Returns the provider's folder.
 */
export function installSqliteWithoutAddon(project: string): string {
  const workspaceSqlite = fs.realpathSync(path.join(CLI_DIR, "node_modules", "@hermes", "memory-sqlite"));
  const modules = path.join(project, "node_modules");
  const manifest = path.join(project, "package.json");
  const pkg: { dependencies?: Record<string, string> } = fs.existsSync(manifest)
    ? JSON.parse(fs.readFileSync(manifest, "utf8"))
    : { name: "app", private: true };
  pkg.dependencies = { ...pkg.dependencies, "@hermes/memory-sqlite": "*" };
  fs.mkdirSync(project, { recursive: true });
  fs.writeFileSync(manifest, JSON.stringify(pkg, null, 2));
  const providerDir = path.join(modules, "@hermes", "memory-sqlite");
  copyPackage(workspaceSqlite, providerDir);
  link(path.join(CLI_DIR, "node_modules", "@hermes", "memory-core"), path.join(modules, "@hermes", "memory-core"));
  for (const dependency of ["@hermes/memory-provider-kit", "ajv"])
    link(path.join(workspaceSqlite, "node_modules", dependency), path.join(providerDir, "node_modules", dependency));
  const betterSqlite = fs.realpathSync(path.join(workspaceSqlite, "node_modules", "better-sqlite3"));
  const unbuilt = path.join(providerDir, "node_modules", "better-sqlite3");
  fs.mkdirSync(unbuilt, { recursive: true });
  fs.cpSync(path.join(betterSqlite, "lib"), path.join(unbuilt, "lib"), { recursive: true });
  fs.copyFileSync(path.join(betterSqlite, "package.json"), path.join(unbuilt, "package.json"));
  // `bindings`, its dependency that looks for the addon, as npm would have placed it.
  link(path.join(betterSqlite, "..", "bindings"), path.join(providerDir, "node_modules", "bindings"));
  return providerDir;
}
