#!/usr/bin/env node
// Root `pnpm demo`: runs the hermes-memory demo from the workspace build.
import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
const bin = new URL("../packages/memory-cli/dist/bin.js", import.meta.url);
// Discovery starts in the CLI's package, whose package.json lists @hermes/memory-sqlite (a dev
// dependency), the way a user's project lists the providers it installed.
const cliDir = new URL("../packages/memory-cli/", import.meta.url);
if (!existsSync(bin)) {
  console.error("The CLI is not built yet: run `pnpm build` first.");
  process.exit(1);
}
const r = spawnSync(process.execPath, [bin.pathname, "--cwd", cliDir.pathname, "demo", ...process.argv.slice(2)], { stdio: "inherit" });
process.exit(r.status ?? 1);
