#!/usr/bin/env node
// Root `pnpm demo`: runs the hermes-memory demo from the workspace build.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
const bin = new URL("../packages/memory-cli/dist/bin.js", import.meta.url);
if (!existsSync(bin)) {
  console.error("The CLI is not built yet: run `pnpm build` first.");
  process.exit(1);
}
const r = spawnSync(process.execPath, [bin.pathname, "demo", ...process.argv.slice(2)], { stdio: "inherit" });
process.exit(r.status ?? 1);
