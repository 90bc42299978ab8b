// Fixture package entry: the minimal provider starting helper processes that shutdown() never
// stops: a `sleep` when the package is imported, and in initialize() a detached `sleep` (its own
// session, unref'd) and a node server that ignores SIGTERM. Each writes its pid to
// $CONTRACT_FIXTURE_PID_DIR when that is set.
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { MinimalProvider } from "../minimal-provider.js";

const server = `
process.on("SIGTERM", () => undefined);
require("node:http").createServer((_q, r) => r.end("ok")).listen(0, "127.0.0.1");
`;

function record(child, label) {
  const dir = process.env.CONTRACT_FIXTURE_PID_DIR;
  if (dir && child.pid) fs.writeFileSync(path.join(dir, `${label}-${child.pid}`), String(child.pid));
}

const atImport = spawn("sleep", ["601"], { stdio: "ignore" });
atImport.unref();
record(atImport, "import");

let started = false;

class ChildProcessProvider extends MinimalProvider {
  initialize(sessionId, ctx) {
    super.initialize(sessionId, ctx);
    if (started) return;
    started = true;
    const sleeper = spawn("sleep", ["600"], { detached: true, stdio: "ignore" });
    sleeper.unref();
    record(sleeper, "sleep");
    const node = spawn(process.execPath, ["-e", server], { stdio: "ignore", env: { PATH: process.env.PATH ?? "" } });
    node.unref();
    record(node, "node");
  }
}

export function register(ctx) {
  ctx.registerMemoryProvider(new ChildProcessProvider());
}
