import { readFileSync } from "node:fs";

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
