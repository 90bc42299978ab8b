import { Command, CommanderError, Option, type OutputConfiguration } from "commander";
import { HermesMemoryError, closestNames, describeError, errorDocument } from "@hermes/memory-core";
import { createCliContext } from "./cli-context.js";
import { processIo, type CliIo } from "./cli-io.js";
import { ReportedFailure } from "./cli-usage-error.js";
import { ExitCode } from "./exit-codes.js";
import { oneLine } from "./output/printer.js";
import { registerPluginsCommands } from "./commands/plugins.js";
import { registerMemoryCommands } from "./commands/memory.js";
import { registerDemoCommand } from "./commands/demo.js";
import { registerMcpCommand } from "./commands/mcp.js";
import { registerProviderCommands, BUILTIN_COMMAND_NAMES } from "./commands/provider-commands.js";
import { CLI_VERSION } from "./version.js";
export { CliUsageError } from "./cli-usage-error.js";

/** The name users type. */
export const CLI_NAME = "hermes-memory";

/** The values of the global options that decide what is built before parsing (home, cwd). */
function prescanGlobalOptions(args: string[]): { hermesHome?: string; cwd?: string; operand?: string } {
  const found: { hermesHome?: string; cwd?: string; operand?: string } = {};
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") break;
    if (arg === "--hermes-home" || arg === "--cwd") {
      found[arg === "--cwd" ? "cwd" : "hermesHome"] = args[i + 1];
      i++;
    } else if (arg.startsWith("--hermes-home=")) {
      found.hermesHome = arg.slice("--hermes-home=".length);
    } else if (arg.startsWith("--cwd=")) {
      found.cwd = arg.slice("--cwd=".length);
    } else if (!arg.startsWith("-") && found.operand === undefined) {
      found.operand = arg;
    }
  }
  return found;
}

/**
 * Build the commander program for one invocation. `args` (without node and script) is scanned
 * first for `--hermes-home`/`--cwd`, because the active provider's subcommands are added before
 * parsing, and only when the command line could be addressing them.
 */
export async function createProgram(io: CliIo, args: string[]): Promise<Command> {
  const program = new Command(CLI_NAME)
    .description("Manage Hermes memory providers: list and install them, set one up, check its status, run its commands.")
    .version(CLI_VERSION, "-V, --version")
    .addOption(new Option("--hermes-home <dir>", "Hermes home (default: $HERMES_HOME, else ~/.hermes)"))
    .addOption(new Option("--cwd <dir>", "working directory for project discovery (default: the current directory)"))
    .option("--json", "print machine-readable JSON instead of text")
    .option("--no-color", "disable colours (also NO_COLOR)")
    .showSuggestionAfterError(true)
    .configureOutput(commandOutput(io, wantsJson(args)))
    .exitOverride();

  registerPluginsCommands(program, io);
  registerMemoryCommands(program, io);
  registerDemoCommand(program, io);
  registerMcpCommand(program, io);

  const pre = prescanGlobalOptions(args);
  // Provider commands are imported only when the command line may address them (or for help), so
  // a broken provider CLI cannot slow down or break the built-in commands.
  const wantsProviderCommands = pre.operand === undefined || pre.operand === "help" || !BUILTIN_COMMAND_NAMES.has(pre.operand);
  if (wantsProviderCommands) {
    const ctx = createCliContext(io, { ...pre, json: args.includes("--json"), color: !args.includes("--no-color") });
    await registerProviderCommands(program, io, ctx, pre.operand);
  }
  for (const command of program.commands) inheritExitOverride(command, io, wantsJson(args));
  return program;
}

/** True when the command line asks for `--json` (before a `--` that ends the options). */
function wantsJson(args: readonly string[]): boolean {
  const end = args.indexOf("--");
  return (end === -1 ? args : args.slice(0, end)).includes("--json");
}

/**
 * Where commander writes. Its own errors (unknown command or option, missing argument) are one
 * line on stderr; under `--json` they are left to `runCli`, which prints them as the JSON error
 * document on stdout.
 */
function commandOutput(io: CliIo, json: boolean): OutputConfiguration {
  return {
    writeOut: (s) => io.stdout.write(s),
    writeErr: (s) => io.stderr.write(s),
    outputError: (s, write) => {
      if (!json) write(`${CLI_NAME}: ${commanderMessage(s)}\n`);
    },
  };
}

/** Commander's error text as one line, without its `error:` prefix. */
function commanderMessage(text: string): string {
  return oneLine(text.replace(/^error:\s*/i, ""));
}

function inheritExitOverride(command: Command, io: CliIo, json: boolean): void {
  command.exitOverride();
  command.configureOutput(commandOutput(io, json));
  command.hook("preSubcommand", refuseUnknownSubcommand);
  for (const sub of command.commands) inheritExitOverride(sub, io, json);
}

/**
 * A word in a subcommand's place that names none (`memory stauts`) is an unknown command, with
 * the closest names suggested as for a top-level typo. Commander would hand it to the default
 * subcommand (`memory` runs `status`), which takes no arguments and could only say "too many
 * arguments"; a default subcommand that takes arguments still receives it.
 */
function refuseUnknownSubcommand(parent: Command, sub: Command): void {
  const word = parent.args[0];
  if (word === undefined || word.startsWith("-") || sub.registeredArguments.length > 0) return;
  const names = parent.commands.flatMap((c) => [c.name(), ...c.aliases()]);
  if (names.includes(word)) return;
  const close = closestNames(word, names);
  const meant = close.length === 0 ? "" : `\n(Did you mean ${close.length > 1 ? `one of ${close.join(", ")}` : close[0]}?)`;
  parent.error(`error: unknown command '${word}'${meant}`, { code: "commander.unknownCommand" });
}

/** Exit code for an error a command threw (see `ExitCode`). */
export function exitCodeFor(error: unknown): number {
  if (error instanceof CommanderError) {
    // Help and version "errors" are normal exits.
    return error.exitCode === 0 ? ExitCode.ok : ExitCode.userError;
  }
  // Typed errors carry a remedy the user can act on; anything else is a bug.
  if (HermesMemoryError.isInstance(error)) return ExitCode.userError;
  return ExitCode.internalError;
}

/** Stable codes of commander's usage errors (the JSON error document's `code`). */
function commanderCode(error: CommanderError): string {
  if (error.code === "commander.unknownCommand") return "UNKNOWN_COMMAND";
  if (error.code === "commander.unknownOption") return "UNKNOWN_OPTION";
  return "INVALID_ARGUMENT";
}

/**
 * Report a failed command and return its exit code. Under `--json` the report is the JSON error
 * document on stdout, whatever failed (a usage error, a typed error, a bug); otherwise one line
 * on stderr. Commander has already printed its own errors and help in text mode.
 */
function reportFailure(io: CliIo, error: unknown, json: boolean): number {
  const code = exitCodeFor(error);
  if (error instanceof CommanderError) {
    if (json && code !== ExitCode.ok) {
      // A command group called without its subcommand prints its help (on stderr) as the "error".
      const message =
        error.code === "commander.help"
          ? "a subcommand is missing; the help printed on stderr lists them"
          : commanderMessage(error.message);
      io.stdout.write(`${JSON.stringify({ error: { code: commanderCode(error), message } })}\n`);
    }
    return code;
  }
  if (error instanceof ReportedFailure) return code;
  if (json) {
    io.stdout.write(`${JSON.stringify(errorDocument(error))}\n`);
  } else if (code === ExitCode.userError) {
    io.stderr.write(`${CLI_NAME}: ${oneLine(describeError(error))}\n`);
  } else {
    io.stderr.write(
      `${CLI_NAME}: internal error: ${oneLine(describeError(error))}. This is a bug; rerun with HERMES_MEMORY_DEBUG=1 for details and report it.\n`,
    );
  }
  if (code === ExitCode.internalError && io.env.HERMES_MEMORY_DEBUG && error instanceof Error && error.stack)
    io.stderr.write(`${error.stack}\n`);
  return code;
}

/**
 * Run the CLI: parse `args` (without node and script), run the command, and return the exit code.
 * User errors print one line on stderr (`hermes-memory: <what went wrong and what to do>`) and
 * return 1; unexpected failures print `internal error` and return 2 (stack with
 * `HERMES_MEMORY_DEBUG=1`). With `--json` every failure is instead one JSON document on stdout,
 * `{"error": {"code": …, "message": …}}`, with the same exit codes. Never calls `process.exit`.
 */
export async function runCli(args: string[], io: CliIo = processIo()): Promise<number> {
  try {
    const program = await createProgram(io, args);
    if (args.length === 0) {
      program.outputHelp();
      return ExitCode.ok;
    }
    await program.parseAsync(args, { from: "user" });
    return ExitCode.ok;
  } catch (error) {
    return reportFailure(io, error, wantsJson(args));
  }
}
