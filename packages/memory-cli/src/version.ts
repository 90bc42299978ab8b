import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

function readVersion(): string {
  try {
    // dist/version.js → ../package.json
    const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version?: unknown };
    return typeof pkg.version === "string" ? pkg.version : "0.0.0";
  } catch {
    return "0.0.0";
  }
}

/** The version of `@hermes/memory-cli` (from its package.json). */
export const CLI_VERSION = readVersion();

/** The package's own directory (holds package.json; its node_modules resolves its dependencies). */
export const CLI_PACKAGE_DIR = fileURLToPath(new URL("..", import.meta.url));
