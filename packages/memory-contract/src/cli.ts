import { Command, CommanderError } from "commander";
import { describeError } from "@hermes/memory-core";
import { formatContractReport } from "./format-report.js";
import { createSetupFromPackage, resolvePackageDir } from "./package-setup.js";
import { runMemoryProviderContract } from "./run-contract.js";

/** Where the CLI writes; injectable for tests. */
export interface CliIo {
  stdout(text: string): void;
  stderr(text: string): void;
  cwd: string;
}

const defaultIo: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  cwd: process.cwd(),
};

/**
 * Run `hermes-memory-contract [package-dir | package-name] [--json] [--provider name]
 * [--only ids]` and return the exit code: 0 all clauses passed or skipped, 1 a clause failed,
 * 2 the package could not be found or read. Never calls `process.exit` itself.
 */
export async function runContractCli(argv: readonly string[], io: CliIo = defaultIo): Promise<number> {
  let exitCode = 0;
  const program = new Command()
    .name("hermes-memory-contract")
    .description("Run the Hermes memory provider contract against a provider package.")
    .argument("[package]", "provider package directory or installed package name (default: the package around the current directory)")
    .option("--json", "print the report as JSON")
    .option("--provider <name>", "provider to test when the package declares several")
    .option("--only <ids...>", "run only these clause ids or groups (e.g. C-TOOLS-1 HOOKS)")
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .action(async (target: string | undefined, opts: { json?: boolean; provider?: string; only?: string[] }) => {
      let prepared;
      try {
        const dir = resolvePackageDir(target, io.cwd);
        prepared = await createSetupFromPackage(dir, opts.provider ? { providerName: opts.provider } : {});
      } catch (error) {
        io.stderr(`hermes-memory-contract: ${describeError(error)}\n`);
        exitCode = 2;
        return;
      }
      try {
        const report = await runMemoryProviderContract(prepared.setup, opts.only ? { only: opts.only } : {});
        io.stdout(opts.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatContractReport(report)}\n`);
        exitCode = report.ok ? 0 : 1;
      } finally {
        prepared.dispose();
      }
    });
  try {
    await program.parseAsync([...argv], { from: "user" });
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode === 0 ? 0 : 2;
    throw error;
  }
  return exitCode;
}
