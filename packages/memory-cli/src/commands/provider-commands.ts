import * as prompts from "@clack/prompts";
import type { Command } from "commander";
import {
  HermesMemoryError,
  describeError,
  discoverMemoryProviders,
  isCoreMemoryProvider,
  loadProviderCli,
  readConfig,
  type ProviderCliContext,
} from "@hermes/memory-core";
import { CliUsageError } from "../cli-usage-error.js";
import { discoveryScope, type CliContext } from "../cli-context.js";
import type { CliIo } from "../cli-io.js";
import { startProgressBar } from "../output/progress.js";

/** Top-level commands of the CLI itself; a provider with one of these names gets no subcommand. */
export const BUILTIN_COMMAND_NAMES: ReadonlySet<string> = new Set(["plugins", "memory", "demo", "mcp", "help"]);

/**
 * Add `hermes-memory <provider> …` for the ACTIVE provider only (config `memory.provider`), from
 * its CLI module's `registerCli`. Any failure (config unreadable, provider missing, module throws
 * on import or in `registerCli`) becomes one warning line on stderr and leaves the rest of the CLI
 * intact. `operand` (the first word of the command line) decides whether the warning is relevant:
 * it is only printed for help or when the user addressed the provider.
 */
export async function registerProviderCommands(program: Command, io: CliIo, ctx: CliContext, operand: string | undefined): Promise<void> {
  let name = "";
  try {
    name = (await readConfig(ctx.hermesHome)).memory.provider.trim();
  } catch (error) {
    // The built-in commands report an unreadable config.yaml themselves. A command line addressing
    // a provider (`hermes-memory sqlite stats`) would otherwise end in commander's bare "unknown
    // command": the config error is the answer.
    if (operand !== undefined && operand !== "help" && !operand.startsWith("-")) throw error;
    return;
  }
  if (operand !== undefined && operand !== "help" && operand !== name && !operand.startsWith("-")) {
    await explainInactiveProvider(ctx, operand, name);
  }
  if (isCoreMemoryProvider(name)) return;
  const addressed = operand === name;
  if (BUILTIN_COMMAND_NAMES.has(name)) {
    if (addressed) ctx.out.warn(`provider '${name}' has the same name as a built-in command; its subcommands are not available.`);
    return;
  }
  // Only import the provider's CLI for help listings or when the user called it.
  if (operand !== undefined && operand !== "help" && !addressed) return;
  let registerCli;
  try {
    registerCli = await loadProviderCli(name, { ...discoveryScope(ctx), registerSkills: false });
  } catch (error) {
    // Addressed directly: the failure is the answer (exit 1). For help: one warning, help still prints.
    if (addressed)
      throw new CliUsageError(
        `${name} commands unavailable: ${describeError(error)}`,
        HermesMemoryError.isInstance(error) ? error.code : "PROVIDER_LOAD_FAILED",
      );
    ctx.out.warn(`${name} commands unavailable: ${describeError(error)}`);
    return;
  }
  if (!registerCli) {
    if (addressed) {
      throw new CliUsageError(
        `memory provider '${name}' has no command-line commands (it ships no CLI module exporting registerCli); use \`hermes-memory memory status\` to inspect it.`,
      );
    }
    return;
  }
  const command = program.command(name).description(`commands of the active memory provider '${name}'`);
  const context: ProviderCliContext = {
    hermesHome: ctx.hermesHome,
    providerName: name,
    cwd: ctx.cwd,
    json: ctx.json,
    color: ctx.color,
    showProgress: ctx.showProgress,
    io: {
      stdout: (text) => void io.stdout.write(text),
      stderr: (text) => void io.stderr.write(text),
      isTTY: io.stderr.isTTY === true,
      ...(io.stdin.isTTY === true && io.stderr.isTTY === true
        ? {
            confirm: async (question: string) => {
              const answer = await prompts.confirm({ message: question, initialValue: false, input: io.stdin, output: io.stderr });
              return answer === true;
            },
          }
        : {}),
      ...(ctx.showProgress && io.stderr.isTTY === true ? { progress: (label: string) => startProgressBar(ctx, label) } : {}),
    },
  };
  // The root's global --json is parsed before subcommands see it; hand it to provider subcommands
  // that declare their own --json, so `hermes-memory <provider> stats --json` means what it says.
  command.hook("preAction", (_self, action) => {
    if (program.opts<{ json?: boolean }>().json && action.options.some((o) => o.attributeName() === "json")) {
      action.setOptionValue("json", true);
    }
  });
  try {
    await registerCli(command, context);
  } catch (error) {
    ctx.out.warn(`${name} commands unavailable: its registerCli() failed: ${describeError(error)}`);
    const index = program.commands.indexOf(command);
    if (index >= 0) (program.commands as Command[]).splice(index, 1);
  }
}

/**
 * `hermes-memory <name> …` where `<name>` is an installed but inactive provider: say so and how to
 * activate it, instead of commander's bare "unknown command". Other unknown words are left to
 * commander (which suggests the closest command).
 */
async function explainInactiveProvider(ctx: CliContext, operand: string, active: string): Promise<void> {
  const { providers } = await discoverMemoryProviders(discoveryScope(ctx));
  if (!providers.some((p) => p.name === operand)) return;
  const now = isCoreMemoryProvider(active) ? "built-in memory only" : `'${active}'`;
  throw new CliUsageError(
    `'${operand}' commands are only available while it is the active memory provider (now: ${now}); run \`hermes-memory memory setup ${operand}\` to activate it.`,
  );
}
