import path from "node:path";
import type { Command } from "commander";
import {
  closestNames,
  discoverMemoryProviders,
  HermesMemoryError,
  readConfig,
  setPluginDisabled,
  type DiscoveredProvider,
} from "@hermes/memory-core";
import { discoveryScope, type CliContext } from "../cli-context.js";
import type { CliIo } from "../cli-io.js";
import { withContext } from "../with-context.js";

/** The JSON document of `plugins enable|disable --json`. */
export interface PluginToggleReport {
  hermesHome: string;
  configPath: string;
  name: string;
  /** Where the provider was found; `null` for a name only listed in `plugins.disabled`. */
  source: DiscoveredProvider["source"] | null;
  location: string | null;
  /** Whether loading refuses the provider now (bundled providers never are). */
  disabled: boolean;
  /** config.yaml was rewritten (false when it already said so). */
  changed: boolean;
  /** `plugins.disabled` after the command. */
  pluginsDisabled: string[];
  /** Why the command changed nothing a user might expect it to (bundled providers). */
  note?: string;
}

/** Add `plugins enable <name>` and `plugins disable <name>`. */
export function registerEnableCommands(plugins: Command, io: CliIo): void {
  plugins
    .command("enable")
    .description("remove a provider from plugins.disabled in config.yaml, so it can be loaded again")
    .argument("<name>", "provider name (or the folder / package name it is listed under)")
    .action(withContext(io, (ctx, name: string) => togglePlugin(ctx, name, false)));
  plugins
    .command("disable")
    .description("add a provider to plugins.disabled in config.yaml: it stays installed but is not loaded")
    .argument("<name>", "provider name")
    .action(withContext(io, (ctx, name: string) => togglePlugin(ctx, name, true)));
}

function aliasesOf(provider: DiscoveredProvider): string[] {
  return [provider.name, path.basename(provider.dir), ...(provider.packageName ? [provider.packageName] : [])];
}

async function togglePlugin(ctx: CliContext, rawName: string, disable: boolean): Promise<void> {
  const name = rawName.trim();
  const [discovery, config] = await Promise.all([discoverMemoryProviders(discoveryScope(ctx)), readConfig(ctx.hermesHome)]);
  const found = discovery.providers.find((p) => aliasesOf(p).includes(name));
  // A name only listed in plugins.disabled (its provider since removed) can still be re-enabled.
  if (!found && !(!disable && config.plugins.disabled.includes(name))) {
    const close = closestNames(
      name,
      discovery.providers.map((p) => p.name),
    );
    const meant = close.length > 0 ? ` Did you mean ${close.map((n) => `'${n}'`).join(" or ")}?` : "";
    throw new HermesMemoryError({
      code: "PROVIDER_NOT_FOUND",
      message: `Memory provider '${name}' not found.${meant} Run \`hermes-memory plugins list\` to see installed providers; found: ${discovery.providers.map((p) => p.name).join(", ") || "none"}.`,
    });
  }
  const providerName = found?.name ?? name;
  const bundled = found?.source === "bundled";
  const note = bundled
    ? `'${providerName}' is bundled with the host, and bundled providers ignore plugins.disabled: it ${disable ? "cannot be disabled there" : "is always enabled"}. To stop using it, run \`hermes-memory memory off\` or set up another provider.`
    : undefined;
  let change = { changed: false, disabled: config.plugins.disabled, configPath: path.join(ctx.hermesHome, "config.yaml") };
  // Disabling a bundled provider would write a line that changes nothing; enabling still cleans the list.
  if (!(bundled && disable)) {
    change = await setPluginDisabled(ctx.hermesHome, { name: providerName, disabled: disable, aliases: found ? aliasesOf(found) : [name] });
  }
  const report: PluginToggleReport = {
    hermesHome: ctx.hermesHome,
    configPath: change.configPath,
    name: providerName,
    source: found?.source ?? null,
    location: found?.dir ?? null,
    disabled: disable && !bundled,
    changed: change.changed,
    pluginsDisabled: change.disabled,
    ...(note !== undefined ? { note } : {}),
  };
  const { out } = ctx;
  const c = out.colors;
  out.result(report, () => {
    if (note !== undefined) out.line(`${c.yellow("!")} ${note}`);
    else {
      const state = disable ? "disabled" : "enabled";
      out.line(
        `${c.green("✓")} Memory provider '${providerName}' ${change.changed ? "is now" : "was already"} ${state} (plugins.disabled in ${change.configPath}).`,
      );
    }
  });
  if (disable && !bundled && config.memory.provider === providerName)
    out.warn(
      `memory.provider is '${providerName}': hosts now fall back to built-in memory. Run \`hermes-memory plugins enable ${providerName}\` to undo, or choose another provider.`,
    );
}
