import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

/** A fresh temp directory (real path) and a cleanup function. */
export function makeTempDir(prefix = "hermes-discovery-"): { dir: string; cleanup: () => void } {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** Write files (relative path → content; objects are JSON-encoded). Parent folders are created. */
export function writeFiles(root: string, files: Record<string, string | object>): void {
  for (const [relative, content] of Object.entries(files)) {
    const file = path.join(root, relative);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, typeof content === "string" ? content : JSON.stringify(content, null, 2));
  }
}

/** URL of core's `provider.ts`, so fixture providers extend the very class the tests use. */
export const PROVIDER_MODULE_URL = pathToFileURL(path.resolve(import.meta.dirname, "../provider.ts")).href;

export interface FixtureProviderOptions {
  /** Name reported by the instance (defaults to `name`). */
  reportedName?: string;
  available?: boolean;
  unavailableReason?: string;
  /** Extra class body. */
  body?: string;
  /** Code placed at module top level (e.g. `throw new Error("boom")`). */
  topLevel?: string;
  /** How the provider is exposed: `register(ctx)` (default), default instance, default class, named class. */
  style?: "register" | "default-instance" | "default-class" | "named-class";
  /** Extra statements inside register(ctx), after registerMemoryProvider. */
  afterRegister?: string;
}

/** Source of an ESM provider module extending core's MemoryProvider. */
export function providerSource(name: string, options: FixtureProviderOptions = {}): string {
  const reported = options.reportedName ?? name;
  const cls = `class FixtureProvider extends MemoryProvider {
  name = ${JSON.stringify(reported)};
  isAvailable() { return ${options.available ?? true}; }
  unavailableReason() { return ${JSON.stringify(options.unavailableReason ?? "")}; }
  initialize(sessionId, ctx) { this.sessionId = sessionId; this.ctx = ctx; }
  getToolSchemas() { return []; }
  getConfigSchema() { return []; }
  ${options.body ?? ""}
}`;
  const style = options.style ?? "register";
  const exportPart =
    style === "register"
      ? `export function register(ctx) { ctx.registerMemoryProvider(new FixtureProvider()); ${options.afterRegister ?? ""} }`
      : style === "default-instance"
        ? `export default new FixtureProvider();`
        : style === "default-class"
          ? `export default FixtureProvider;`
          : `export { FixtureProvider };`;
  return `import { MemoryProvider } from ${JSON.stringify(PROVIDER_MODULE_URL)};\n${options.topLevel ?? ""}\n${cls}\n${exportPart}\n`;
}

/** A module that fails as soon as it is imported (proves discovery imports nothing). */
export const THROWS_ON_IMPORT = `globalThis.__hermesImported = (globalThis.__hermesImported ?? 0) + 1;\nthrow new Error("imported!");\n// registerMemoryProvider\n`;

/**
 * Install `pkg` (name → package.json + files) into `root` the way npm does (flat
 * `node_modules/<name>`) or the way pnpm does (`node_modules/.pnpm/<name>@<v>/node_modules/<name>`
 * plus a symlink `node_modules/<name>` → there).
 */
export function installPackage(
  root: string,
  layout: "npm" | "pnpm",
  manifest: Record<string, unknown> & { name: string; version?: string },
  files: Record<string, string> = {},
): string {
  const version = manifest.version ?? "1.0.0";
  const name = manifest.name;
  let dir: string;
  if (layout === "npm") {
    dir = path.join(root, "node_modules", name);
  } else {
    dir = path.join(root, "node_modules", ".pnpm", `${name.replace("/", "+")}@${version}`, "node_modules", name);
    const link = path.join(root, "node_modules", name);
    fs.mkdirSync(path.dirname(link), { recursive: true });
    fs.symlinkSync(path.relative(path.dirname(link), dir), link, "dir");
  }
  writeFiles(dir, { "package.json": { version, ...manifest }, ...files });
  return fs.realpathSync(dir);
}
