import { readFileSync } from "node:fs";
import { Command, CommanderError } from "commander";
import { describeError } from "@hermes/memory-core";
import { formatContractReport } from "./format-report.js";
import { unrestorableBuiltins } from "./builtin-watch.js";
import type { ContractResult } from "./contract-report.js";
import { ownValue, settingOf, toJson, writeStderr, writeStdout } from "./intrinsics.js";
import { createSetupFromPackage, resolvePackageDir } from "./package-setup.js";
import { runMemoryProviderContract } from "./run-contract.js";
import { captureStrayErrors, takeStrayErrors } from "./stray-errors.js";

/** Where the CLI writes; injectable for tests. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  cwd: string;
}

// The real stdout and stderr writes, captured before anything of the package is imported (and
// before `guardProcess` sends provider output to stderr).
const defaultIo: CliIo = {
  stdout: (text) => {
    writeStdout(text);
  },
  stderr: (text) => {
    writeStderr(text);
  },
  cwd: process.cwd(),
};

/**
 * While a provider package is loaded and tested in this process: `process.exit()` throws instead
 * of ending the process (the call, or the import, that made it fails), whatever the provider
 * writes to stdout goes to stderr (so it cannot corrupt the report or `--json`), and uncaught
 * exceptions / unhandled rejections are queued for the clauses. Returns the function that undoes it.
 */
function guardProcess(): () => void {
  const exit = process.exit;
  const write = process.stdout.write;
  process.exit = ((code?: number | string | null) => {
    throw new Error(
      `the provider called process.exit(${code === undefined ? "" : String(code)}); a provider must never end the host process`,
    );
  }) as typeof process.exit;
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;
  const releaseStrayErrors = captureStrayErrors();
  return () => {
    process.exit = exit;
    process.stdout.write = write;
    releaseStrayErrors();
  };
}

function anyFailed(results: readonly ContractResult[]): boolean {
  for (let i = 0; i < results.length; i++) if (ownValue(results[i], "status") === "fail") return true;
  return results.length === 0;
}

interface CliOptions {
  json: boolean;
  provider: string | undefined;
  only: string[] | undefined;
}

function optionsOf(given: unknown): CliOptions {
  const provider = settingOf(given, "provider");
  const only = settingOf(given, "only");
  return {
    json: settingOf(given, "json") === true,
    provider: typeof provider === "string" ? provider : undefined,
    only: Array.isArray(only) ? only.filter((o): o is string => typeof o === "string") : undefined,
  };
}

/**
 * Run `hermes-memory-contract [package-dir | package-name] [--json] [--provider name]
 * [--only ids]` and return the exit code: 0 all clauses passed or skipped, 1 a clause failed,
 * 2 the package could not be found or read. Never calls `process.exit` itself.
 */
export async function runContractCli(argv: readonly string[], io: CliIo = defaultIo): Promise<number> {
  let exitCode = 0;
  const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
  const program = new Command()
    .name("hermes-memory-contract")
    .description("Run the Hermes memory provider contract against a provider package.")
    .version(version)
    .argument("[package]", "provider package directory or installed package name (default: the package around the current directory)")
    .option("--json", "print the report as JSON")
    .option("--provider <name>", "provider to test when the package declares several")
    .option("--only <ids...>", "run only these clause ids or groups (e.g. C-TOOLS-1 HOOKS)")
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .action(async (target: string | undefined, given: { json?: boolean; provider?: string; only?: string[] }) => {
      // Options are copied before anything of the package runs, reading only the parsed values
      // (never fields a package might later add to Object.prototype).
      const opts = optionsOf(given);
      const release = guardProcess();
      try {
        exitCode = await runAction(target, opts);
      } finally {
        release();
        const strays = takeStrayErrors();
        if (strays.length > 0)
          io.stderr(`hermes-memory-contract: the provider package raised errors outside the clauses: ${strays.join("; ")}\n`);
      }
    });
  const runAction = async (target: string | undefined, opts: CliOptions): Promise<number> => {
    let prepared;
    try {
      const dir = resolvePackageDir(target, io.cwd);
      prepared = await createSetupFromPackage(dir, opts.provider ? { providerName: opts.provider } : {});
    } catch (error) {
      io.stderr(`hermes-memory-contract: ${describeError(error)}\n`);
      return 2;
    }
    try {
      const report = await runMemoryProviderContract(prepared.setup, opts.only ? { only: opts.only } : {});
      // The run put back every built-in the package changed that can be put back; the report is
      // still serialised with functions captured at start-up, and the exit code is decided from
      // the listed results with no built-in method a package could have replaced.
      const unrestored = unrestorableBuiltins();
      io.stdout(opts.json ? `${toJson(report, 2)}\n` : `${formatContractReport(report)}\n`);
      if (unrestored.length > 0) {
        io.stderr(
          `hermes-memory-contract: the provider package changed built-ins that cannot be put back (${unrestored.join(", ")}), so the report above may be wrong; the run counts as failed (C-LIFECYCLE-4).\n`,
        );
        return 1;
      }
      return anyFailed(report.results) ? 1 : 0;
    } finally {
      prepared.dispose();
    }
  };
  try {
    await program.parseAsync([...argv], { from: "user" });
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    throw error;
  }
  return exitCode;
}
