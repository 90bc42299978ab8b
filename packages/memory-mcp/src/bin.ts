#!/usr/bin/env node
import { runMcpCli } from "./cli.js";

const code = await runMcpCli(process.argv.slice(2), {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  env: process.env,
  cwd: process.cwd(),
});
// The server has stopped and memory is flushed; a provider handle left open must not keep the
// process alive.
process.exitCode = code;
setTimeout(() => process.exit(code), 200).unref();
