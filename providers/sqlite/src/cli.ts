import type { Command } from "commander";
import { HermesMemoryError, describeError, errorDocument, type ProviderCliContext, type ProviderCliIo } from "@hermes/memory-core";
import {
  doctorCommand,
  exportCommand,
  forgetCommand,
  importCommand,
  listCommand,
  migrateCommand,
  purgeCommand,
  searchCommand,
  statsCommand,
  vacuumCommand,
  processIo,
  type CommandContext,
  type CommandIo,
  type ForgetOptions,
} from "./commands.js";

/** What the host CLI passes: core's `ProviderCliContext` (kept under this name for importers). */
export type CliContext = ProviderCliContext;

/**
 * The host's streams, writing each line the commands emit with its newline: the host's
 * `ProviderCliIo` writes text as given, and the commands (like `processIo`) emit one line per call,
 * so without this `export` to stdout ran every record into one line.
 */
function lineIo(host: ProviderCliIo): CommandIo {
  const line = (text: string) => (text.endsWith("\n") ? text : `${text}\n`);
  return {
    stdout: (text) => host.stdout(line(text)),
    stderr: (text) => host.stderr(line(text)),
    get isTTY() {
      return host.isTTY;
    },
    ...(host.confirm ? { confirm: (question: string) => host.confirm!(question) } : {}),
    ...(host.progress ? { progress: (label: string) => host.progress!(label) } : {}),
  };
}

/**
 * Add the provider's subcommands to `command` (the host creates `hermes-memory sqlite`): stats,
 * search, list, forget, purge, export, import, migrate, vacuum, doctor — each with `--json`. A failure
 * prints the error's message on stderr, or under `--json` core's `errorDocument` on stdout, and sets
 * `process.exitCode` to 1 (2 for an untyped error: a bug); a scope `forget` erasing nothing,
 * `doctor` finding problems and `import` refusing lines (the valid lines are still imported) print
 * their report and set 1; nothing here calls `process.exit`.
 */
export function registerCli(command: Command, context: CliContext): void {
  const io = context.io ? lineIo(context.io) : processIo;
  const ctx: CommandContext = { hermesHome: context.hermesHome, providerName: context.providerName, io };
  const run =
    <A extends unknown[]>(fn: (...args: A) => Promise<unknown>, failed?: (result: unknown) => boolean) =>
    async (...args: A) => {
      try {
        const result = await fn(...args);
        if (failed?.(result)) process.exitCode = 1;
      } catch (error) {
        // Under --json (the host's or the subcommand's own) a failure is the JSON error document on
        // stdout, as for the host's commands; otherwise one line on stderr.
        const command = args[args.length - 1] as Command | undefined;
        if (context.json === true || command?.opts?.()?.json === true) io.stdout(JSON.stringify(errorDocument(error)));
        else io.stderr(`hermes-memory ${context.providerName}: ${describeError(error)}`);
        process.exitCode = HermesMemoryError.isInstance(error) ? 1 : 2;
      }
    };

  command
    .command("stats")
    .description("Item counts, sessions, database path and size")
    .option("--json", "machine-readable output")
    .action(run((opts: { json?: boolean }) => statsCommand(ctx, opts)));

  command
    .command("search <query>")
    .description("Ranked full-text search over stored memory")
    .option("-l, --limit <n>", "most results", "10")
    .option("-k, --kind <kind>", "turn, fact or checkpoint")
    .option("--filter <json>", 'a JSON filter, e.g. \'{"tags":{"any":["work"]},"metadata":{"project":"apollo"}}\'')
    .option("--json", "machine-readable output")
    .action(
      run((query: string, opts: { limit?: string; kind?: string; filter?: string; json?: boolean }) => searchCommand(ctx, query, opts)),
    );

  command
    .command("list")
    .description("Newest items first")
    .option("-l, --limit <n>", "most items", "20")
    .option("-k, --kind <kind>", "turn, fact or checkpoint")
    .option("--json", "machine-readable output")
    .action(run((opts: { limit?: string; kind?: string; json?: boolean }) => listCommand(ctx, opts)));

  command
    .command("forget [id]")
    .description("Erase one item by id, or every item in a scope (asks first unless --yes)")
    .option("--user <id>", "items of this user")
    .option("--session <id>", "items of this session")
    .option("-k, --kind <kind>", "items of this kind: turn, fact or checkpoint")
    .option("--tag <tag>", "items with this tag")
    .option("--filter <json>", "a JSON filter (any search filter key)")
    .option("--all", "erase also when the scope matches every item (alone: every item)")
    .option("--yes", "erase without asking")
    .option("--compact", "afterwards merge the FTS index and truncate the WAL so the erased text leaves the file")
    .option("--json", "machine-readable output")
    .action(
      run(
        (id: string | undefined, opts: ForgetOptions) => forgetCommand(ctx, id, opts),
        (r) => !(r as { forgotten: boolean }).forgotten,
      ),
    );

  command
    .command("purge")
    .description("Delete every expired item now")
    .option("--json", "machine-readable output")
    .action(run((opts: { json?: boolean }) => purgeCommand(ctx, opts)));

  command
    .command("export [file]")
    .description("Write every item as JSONL (stdout without a file)")
    .option("--json", "machine-readable summary")
    .action(run((file: string | undefined, opts: { json?: boolean }) => exportCommand(ctx, file, opts)));

  command
    .command("import <file>")
    .description("Read a JSONL export; items already present (same digest) are skipped")
    .option("--json", "machine-readable summary, no progress bar")
    .action(
      run(
        (file: string, opts: { json?: boolean }) => importCommand(ctx, file, opts),
        (r) => (r as { invalid: number }).invalid > 0,
      ),
    );

  command
    .command("migrate")
    .description("Bring the database to the current schema now (with progress), instead of on the agent's next start")
    .option("--json", "machine-readable summary, no progress bar")
    .action(run((opts: { json?: boolean }) => migrateCommand(ctx, opts)));

  command
    .command("vacuum")
    .description("Rebuild the FTS index and compact the database file")
    .option("--json", "machine-readable output")
    .action(run((opts: { json?: boolean }) => vacuumCommand(ctx, opts)));

  command
    .command("doctor")
    .description("Check integrity (PRAGMA integrity_check) and FTS index consistency")
    .option("--json", "machine-readable output")
    .action(
      run(
        (opts: { json?: boolean }) => doctorCommand(ctx, opts),
        (r) => !(r as { ok: boolean }).ok,
      ),
    );
}
