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

// A provider's leaked timer may still throw after the report; say so in one line instead of a crash.
for (const event of ["uncaughtException", "unhandledRejection"] as const) {
  process.on(event, (error: unknown) => {
    if (process.listenerCount(event) > 1) return; // the CLI's own capture is active and records it
    process.stderr.write(`hermes-memory-contract: the provider package raised an error after the run (${event}): ${error instanceof Error ? error.message : String(error)}\n`);
  });
}

runContractCli(process.argv.slice(2)).then(exitSoon, (error: unknown) => {
  process.stderr.write(`hermes-memory-contract: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  exitSoon(2);
});
