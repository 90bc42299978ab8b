import type { Command } from "commander";
import { configFilePath, isCoreMemoryProvider, readConfig, setActiveProvider } from "@hermes/memory-core";
import type { CliContext } from "../cli-context.js";
import type { CliIo } from "../cli-io.js";
import { withContext } from "../with-context.js";
import { collectSet, setupCommand, type SetupCommandOptions } from "./memory-setup.js";
import { statusCommand } from "./memory-status.js";
import { showCommand } from "./memory-show.js";

/** Add `memory setup|status|off|show`. */
export function registerMemoryCommands(program: Command, io: CliIo): void {
  const memory = program.command("memory").description("set up, inspect and switch the memory provider");

  memory
    .command("setup")
    .description("choose and configure a memory provider (interactive, or --set/--yes)")
    .argument("[provider]", "provider to configure (omit for a picker)")
    .option("--set <key=value>", "set a field without prompting (repeatable)", collectSet, [])
    .option("-y, --yes", "accept defaults and never prompt; fails listing missing required fields")
    .action(withContext(io, (ctx, provider: string | undefined, options: SetupCommandOptions) => setupCommand(ctx, provider, options)));

  memory
    .command("status", { isDefault: true })
    .description("active provider, availability, config (secrets masked), stats and data location")
    .action(withContext(io, (ctx) => statusCommand(ctx)));

  memory
    .command("off")
    .description("switch back to built-in memory only (MEMORY.md / USER.md)")
    .action(withContext(io, (ctx) => offCommand(ctx)));

  memory
    .command("show")
    .description("print MEMORY.md / USER.md entries with usage against the limits")
    .argument("[target]", "memory (MEMORY.md) or user (USER.md); both when omitted")
    .action(withContext(io, (ctx, target: string | undefined) => showCommand(ctx, target)));
}

/** `hermes-memory memory off`: `memory.provider = ""`; provider settings are kept for later. */
async function offCommand(ctx: CliContext): Promise<void> {
  const previous = (await readConfig(ctx.hermesHome)).memory.provider;
  await setActiveProvider(ctx.hermesHome, "");
  const configPath = configFilePath(ctx.hermesHome);
  const { out } = ctx;
  out.result({ provider: "", previousProvider: isCoreMemoryProvider(previous) ? null : previous, configPath }, () => {
    out.line(
      `${out.colors.green("✓")} Memory provider: built-in only (MEMORY.md / USER.md)${isCoreMemoryProvider(previous) ? " (already)" : `, was ${previous}`}`,
    );
    out.line(`  Saved to ${configPath}; settings of other providers are kept.`);
  });
}
