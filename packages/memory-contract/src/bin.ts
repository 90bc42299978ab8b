#!/usr/bin/env node
// First, before anything of a provider package can run: capture the built-ins the verdict and the
// report depend on, and take the snapshot the built-in check compares with.
import { exitProcess, timers, writeStderr } from "./intrinsics.js";
import "./builtin-watch.js";
import { watchChildProcessesFromNow } from "./child-processes.js";
import { runContractCli } from "./cli.js";

// Processes the package starts while it is imported count as the run's too.
watchChildProcessesFromNow();

function exitSoon(code: number): void {
  process.exitCode = code;
  // A provider that leaks a timer or socket would keep the CLI alive forever after the report;
  // this unref'd timer only fires in that case, once stdout has drained. The process.exit used is
  // the one captured at start-up, so a package that replaced it cannot change the exit code.
  timers
    .setTimeout(() => {
      if (process.stdout.writableLength > 0) process.stdout.once("drain", () => exitProcess(code));
      else exitProcess(code);
    }, 500)
    .unref();
  // Ending naturally uses process.exitCode, which a package could have redefined; exit explicitly.
  process.once("beforeExit", () => exitProcess(code));
}

// A provider's leaked timer may still throw after the report; say so in one line instead of a crash.
for (const event of ["uncaughtException", "unhandledRejection"] as const) {
  process.on(event, (error: unknown) => {
    if (process.listenerCount(event) > 1) return; // the CLI's own capture is active and records it
    writeStderr(
      `hermes-memory-contract: the provider package raised an error after the run (${event}): ${error instanceof Error ? error.message : String(error)}\n`,
    );
  });
}

runContractCli(process.argv.slice(2)).then(exitSoon, (error: unknown) => {
  writeStderr(`hermes-memory-contract: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  exitSoon(2);
});
