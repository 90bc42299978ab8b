import fsp from "node:fs/promises";
import path from "node:path";
import type { Command } from "commander";
import {
  describeError,
  discoverMemoryProviders,
  envFileOnlyHint,
  HermesMemoryError,
  installCommandHint,
  isCoreMemoryProvider,
  isProviderDisabled,
  loadMemoryProvider,
  readConfig,
  type DiscoveredProvider,
  type DiscoveryResult,
  type HermesConfig,
} from "@hermes/memory-core";
import { discoveryScope, type CliContext } from "../cli-context.js";
import type { CliIo } from "../cli-io.js";
import { CliUsageError } from "../cli-usage-error.js";
import { renderTable } from "../output/table.js";
import { startSpinner } from "../output/progress.js";
import { withContext } from "../with-context.js";
import { runNpm } from "../npm.js";
import { registerEnableCommands } from "./plugins-enable.js";

/** One row of `plugins list --json`. */
export interface ProviderListing {
  name: string;
  source: DiscoveredProvider["source"];
  version: string | null;
  description: string;
  location: string;
  entry: string;
  packageName: string | null;
  hasCli: boolean;
  active: boolean;
  disabled: boolean;
  /** `isAvailable()`; `null` unless `--check` was given. */
  available: boolean | null;
  /** Why it is not available (or failed to load), when checked. */
  reason?: string;
}

/** Add `plugins list|add|remove|enable|disable`. */
export function registerPluginsCommands(program: Command, io: CliIo): void {
  const plugins = program.command("plugins").description("list, install and remove memory provider plugins");

  plugins
    .command("list", { isDefault: true })
    .description("every discovered provider, what it shadows, and any problems found")
    .option("--check", "import each provider and report isAvailable()")
    .action(withContext(io, (ctx, options: { check?: boolean }) => listPlugins(ctx, options.check === true)));

  plugins
    .command("add")
    .description("install a provider package for this Hermes home (npm install --prefix $HERMES_HOME)")
    .argument("<npm-spec>", "npm package spec: name, name@version, a tarball or a folder")
    .action(withContext(io, (ctx, spec: string) => addPlugin(ctx, spec)));

  plugins
    .command("remove")
    .description("uninstall a provider package installed with `plugins add`")
    .argument("<name>", "provider name or npm package name")
    .action(withContext(io, (ctx, name: string) => removePlugin(ctx, name)));

  registerEnableCommands(plugins, io);
}

function discover(ctx: CliContext, packageRoots?: string[]): Promise<DiscoveryResult> {
  return discoverMemoryProviders({ ...discoveryScope(ctx), ...(packageRoots ? { packageRoots } : {}) });
}

async function checkAvailability(
  ctx: CliContext,
  provider: DiscoveredProvider,
  discovery: DiscoveryResult,
  config: HermesConfig,
): Promise<{ available: boolean; reason?: string }> {
  try {
    const loaded = await loadMemoryProvider(provider.name, {
      hermesHome: ctx.hermesHome,
      cwd: ctx.cwd,
      config,
      discovery,
      registerSkills: false,
      importTimeoutMs: ctx.timeouts.importMs,
    });
    if (loaded.isAvailable() === true) return { available: true };
    const reason = `${loaded.unavailableReason?.() ?? ""}${envFileOnlyHint(loaded, ctx.hermesHome, ctx.io.env)}`.trim();
    return reason ? { available: false, reason } : { available: false };
  } catch (error) {
    // A hung import is bounded by the loader; say so on stderr as well as in the row.
    if (HermesMemoryError.hasCode(error, "PROVIDER_TIMEOUT")) ctx.out.warn(describeError(error));
    return { available: false, reason: describeError(error) };
  }
}

async function listPlugins(ctx: CliContext, check: boolean): Promise<void> {
  const [discovery, config] = await Promise.all([discover(ctx), readConfig(ctx.hermesHome)]);
  const active = config.memory.provider;
  const rows: ProviderListing[] = [];
  for (const p of discovery.providers) {
    const row: ProviderListing = {
      name: p.name,
      source: p.source,
      version: p.version,
      description: p.description,
      location: p.dir,
      entry: p.entry,
      packageName: p.packageName,
      hasCli: p.cli !== null,
      active: p.name === active,
      disabled: isProviderDisabled(p, config),
      available: null,
    };
    if (check) Object.assign(row, await checkAvailability(ctx, p, discovery, config));
    rows.push(row);
  }
  const shadowed = discovery.shadowed.map((s) => ({
    name: s.provider.name,
    source: s.provider.source,
    location: s.provider.dir,
    shadowedBy: { source: s.shadowedBy.source, location: s.shadowedBy.dir },
    message: `${s.provider.source} plugin ${s.provider.name} is shadowed by ${s.shadowedBy.source} ${s.shadowedBy.name}`,
  }));
  const activeMissing = !isCoreMemoryProvider(active) && !rows.some((r) => r.active);
  const install = rows.length === 0 ? await installCommandHint("@hermes/memory-sqlite", { cwd: ctx.cwd, env: ctx.io.env }) : "";
  const { out } = ctx;
  const c = out.colors;
  out.result(
    {
      hermesHome: ctx.hermesHome,
      cwd: ctx.cwd,
      activeProvider: isCoreMemoryProvider(active) ? null : active,
      providers: rows,
      shadowed,
      problems: discovery.problems,
      searched: discovery.searched,
    },
    () => {
      if (rows.length === 0) {
        out.line(`No memory provider plugins found (home ${ctx.hermesHome}, cwd ${ctx.cwd}).`);
        out.line(`Install one with ${install}.`);
      } else {
        const table = renderTable(
          ["NAME", "SOURCE", "VERSION", "AVAILABLE", "ACTIVE", "LOCATION"],
          rows.map((r) => [
            r.disabled ? `${r.name} ${c.dim("(disabled)")}` : r.name,
            r.source,
            r.version ?? "-",
            r.available === null ? c.dim("?") : r.available ? c.green("yes") : c.red("no"),
            r.active ? c.green("✓") : "",
            r.location,
          ]),
          (h) => c.bold(h),
        );
        out.line(table);
        if (!check) out.line(c.dim("AVAILABLE is checked with --check (imports each provider)."));
        for (const r of rows) if (r.reason) out.line(`${c.yellow("!")} ${r.name}: ${r.reason}`);
      }
      out.line(`Active provider: ${isCoreMemoryProvider(active) ? "built-in only (MEMORY.md / USER.md)" : active}`);
      if (activeMissing)
        out.line(
          `${c.red("✗")} memory.provider is '${active}' but no such provider is installed; install it or run \`hermes-memory memory off\`.`,
        );
      if (shadowed.length > 0) {
        out.line("");
        out.line(c.bold("Shadowed:"));
        for (const s of shadowed) out.line(`  ${s.message} (${s.location})`);
      }
      if (discovery.problems.length > 0) {
        out.line("");
        out.line(c.bold("Problems:"));
        for (const p of discovery.problems) {
          out.line(`  ${c.red("✗")} ${p.message}`);
          out.line(`    ${c.dim("→")} ${p.remedy}`);
        }
      }
    },
  );
}

interface HomeManifest {
  dependencies?: Record<string, string>;
  [key: string]: unknown;
}

async function readHomeManifest(home: string): Promise<HomeManifest | null> {
  try {
    return JSON.parse(await fsp.readFile(path.join(home, "package.json"), "utf8")) as HomeManifest;
  } catch {
    return null;
  }
}

/**
 * User-level installs live in `$HERMES_HOME` with its own package.json, which discovery treats as a
 * package root; no project is touched. Only a missing package.json is created: one that exists but
 * cannot be read or parsed is the user's and is never overwritten.
 */
async function ensureHomeManifest(home: string): Promise<void> {
  const file = path.join(home, "package.json");
  try {
    await fsp.mkdir(home, { recursive: true });
  } catch (error) {
    throw new CliUsageError(
      `Cannot use ${home} as the Hermes home: ${describeError(error)}. Point --hermes-home (or HERMES_HOME) at a writable directory.`,
      "STORAGE_FAILED",
    );
  }
  let text: string;
  try {
    text = await fsp.readFile(file, "utf8");
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "ENOENT") {
      throw new CliUsageError(
        `Cannot read ${file}: ${describeError(error)}. It must be a readable JSON file (or absent); fix or move it, then retry.`,
        "STORAGE_FAILED",
      );
    }
    const manifest = {
      name: "hermes-home-memory-providers",
      private: true,
      description: "Memory providers installed with `hermes-memory plugins add` (discovered from this folder).",
      dependencies: {},
    };
    try {
      // "wx": a package.json that appeared meanwhile is kept.
      await fsp.writeFile(file, `${JSON.stringify(manifest, null, 2)}\n`, { flag: "wx" });
    } catch (writeError) {
      if ((writeError as NodeJS.ErrnoException).code !== "EEXIST") {
        throw new CliUsageError(
          `Cannot create ${file}: ${describeError(writeError)}. Point --hermes-home (or HERMES_HOME) at a writable directory.`,
          "STORAGE_FAILED",
        );
      }
    }
    return;
  }
  try {
    JSON.parse(text);
  } catch (error) {
    throw new CliUsageError(
      `${file} is not valid JSON (${describeError(error)}); it was left unchanged. Fix it or move it aside, then retry \`hermes-memory plugins add\`.`,
      "INVALID_CONFIG",
    );
  }
}

async function addPlugin(ctx: CliContext, spec: string): Promise<void> {
  if (spec.trim() === "" || spec.startsWith("-"))
    throw new CliUsageError(`'${spec}' is not an npm package spec; pass e.g. \`hermes-memory plugins add @hermes/memory-sqlite\`.`);
  const home = ctx.hermesHome;
  await ensureHomeManifest(home);
  const before = (await readHomeManifest(home))?.dependencies ?? {};
  const progress = startSpinner(ctx, `Installing ${spec} into ${home}`);
  const result = await runNpm(["install", "--prefix", home, "--save", "--no-audit", "--no-fund", "--no-update-notifier", spec], {
    cwd: home,
    env: ctx.io.env,
  });
  progress.stop();
  if (result.code !== 0) {
    throw new CliUsageError(
      `npm install ${spec} failed (exit ${result.code}): ${result.lastErrorLine || "no output"}. Check the package spec, your registry access (npm config get registry) and that npm is on PATH.`,
    );
  }
  const after = (await readHomeManifest(home))?.dependencies ?? {};
  // A re-install of the same package changes no key; fall back to every dependency whose spec changed.
  let changed = Object.keys(after).filter((name) => before[name] !== after[name]);
  if (changed.length === 0) changed = Object.keys(after).filter((name) => specMentions(spec, name));
  const discovery = await discover(ctx, [home]);
  const installed = await Promise.all(
    changed.map(async (pkg) => ({
      package: pkg,
      version: await installedVersion(home, pkg),
      providers: discovery.providers.filter((p) => p.packageName === pkg).map((p) => p.name),
      problems: discovery.problems.filter((p) => p.location.includes(`${path.sep}${pkg}${path.sep}`) || p.message.includes(pkg)),
    })),
  );
  const { out } = ctx;
  const c = out.colors;
  out.result({ hermesHome: home, spec, installed }, () => {
    for (const item of installed) {
      out.line(
        `${c.green("✓")} Installed ${item.package}${item.version ? `@${item.version}` : ""} into ${path.join(home, "node_modules")}`,
      );
      if (item.providers.length > 0) {
        out.line(`  Memory provider${item.providers.length > 1 ? "s" : ""}: ${item.providers.join(", ")} (source: package, root ${home})`);
        out.line(`  Activate with \`hermes-memory memory setup ${item.providers[0]}\`.`);
      } else {
        out.line(
          `  ${c.yellow("!")} ${item.package} declares no memory provider (no "hermesMemoryProvider" in its package.json); remove it with \`hermes-memory plugins remove ${item.package}\`.`,
        );
      }
      for (const p of item.problems) out.line(`  ${c.red("✗")} ${p.message} → ${p.remedy}`);
    }
    if (installed.length === 0)
      out.line(`npm reported success but ${path.join(home, "package.json")} lists no new dependency for ${spec}.`);
  });
  for (const item of installed) if (item.providers.length === 0 && ctx.json) ctx.out.warn(`${item.package} declares no memory provider.`);
}

function specMentions(spec: string, name: string): boolean {
  return spec === name || spec.startsWith(`${name}@`);
}

async function installedVersion(home: string, pkg: string): Promise<string | null> {
  try {
    const manifest = JSON.parse(await fsp.readFile(path.join(home, "node_modules", pkg, "package.json"), "utf8")) as { version?: unknown };
    return typeof manifest.version === "string" ? manifest.version : null;
  } catch {
    return null;
  }
}

// What `plugins remove` accepts: an npm package name (optionally scoped) or a provider name.
// Anything else — a path such as `../..`, `/`, a URL — is refused before it can reach npm or a
// message that suggests deleting a folder.
const PACKAGE_NAME = /^(?:@[a-z0-9-~][a-z0-9-._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/;

async function removePlugin(ctx: CliContext, name: string): Promise<void> {
  if (!PACKAGE_NAME.test(name) || name.length > 214) {
    throw new CliUsageError(
      `'${name}' is not a provider or npm package name. Pass the package installed with \`hermes-memory plugins add\` (e.g. @hermes/memory-sqlite) or its provider name; \`hermes-memory plugins list\` shows both.`,
    );
  }
  const home = ctx.hermesHome;
  const deps = (await readHomeManifest(home))?.dependencies ?? {};
  let pkg: string | undefined = Object.prototype.hasOwnProperty.call(deps, name) ? name : undefined;
  let providers: string[] = [];
  const discovery = await discover(ctx, [home]);
  if (pkg === undefined) {
    const provider = discovery.providers.find((p) => p.name === name && p.source === "package" && p.packageName && p.packageName in deps);
    pkg = provider?.packageName ?? undefined;
  }
  if (pkg === undefined) {
    const folder = discovery.providers.find((p) => p.name === name && p.source === "user");
    throw new CliUsageError(
      `'${name}' was not installed with \`hermes-memory plugins add\` in ${home}. A provider installed in a project is removed with \`npm uninstall <package>\` there${folder ? `; the user plugin folder of '${name}' is removed by deleting ${folder.dir}` : ""}.`,
    );
  }
  providers = discovery.providers.filter((p) => p.packageName === pkg).map((p) => p.name);
  const progress = startSpinner(ctx, `Removing ${pkg} from ${home}`);
  const result = await runNpm(["uninstall", "--prefix", home, "--save", "--no-audit", "--no-fund", "--no-update-notifier", pkg], {
    cwd: home,
    env: ctx.io.env,
  });
  progress.stop();
  if (result.code !== 0) {
    throw new CliUsageError(
      `npm uninstall ${pkg} failed (exit ${result.code}): ${result.lastErrorLine || "no output"}. Check that npm is on PATH and ${home} is writable.`,
    );
  }
  const config = await readConfig(home);
  const wasActive = providers.includes(config.memory.provider);
  const { out } = ctx;
  out.result({ hermesHome: home, removed: pkg, providers, activeProviderRemoved: wasActive }, () => {
    out.line(
      `${out.colors.green("✓")} Removed ${pkg} from ${home}${providers.length ? ` (provider${providers.length > 1 ? "s" : ""} ${providers.join(", ")})` : ""}`,
    );
  });
  if (wasActive)
    out.warn(
      `memory.provider is still '${config.memory.provider}', which is no longer installed; run \`hermes-memory memory off\` or set up another provider.`,
    );
}
