#!/usr/bin/env node
import { runContractCli } from "./cli.js";

function exitSoon(code: number): void {
  process.exitCode = code;
  // A provider that leaks a timer or socket would keep the CLI alive forever after the report;
  // this unref'd timer only fires in that case, once stdout has drained.
  setTimeout(() => {
    if (process.stdout.writableLength > 0) process.stdout.once("drain", () => process.exit(code));
    else process.exit(code);
  }, 500).unref();
}

runContractCli(process.argv.slice(2)).then(exitSoon, (error: unknown) => {
  process.stderr.write(`hermes-memory-contract: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  exitSoon(2);
});
