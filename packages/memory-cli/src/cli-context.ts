import path from "node:path";
import { DEFAULT_HOOK_TIMEOUT_MS, DEFAULT_IMPORT_TIMEOUT_MS, defaultBundledDir, defaultHermesHome, expandHome } from "@hermes/memory-core";
import type { CliIo } from "./cli-io.js";
import { colorEnabled, createColors } from "./output/colors.js";
import { Printer } from "./output/printer.js";

/** The global options every command accepts (parsed by commander on the root program). */
export interface GlobalOptions {
  hermesHome?: string;
  cwd?: string;
  json?: boolean;
  /** `false` with `--no-color`. */
  color?: boolean;
}

/** What a command needs to run: resolved paths, output, and whether it may prompt or animate. */
export interface CliContext {
  io: CliIo;
  /** `--hermes-home`, else `HERMES_HOME`, else `~/.hermes` (absolute). */
  hermesHome: string;
  /** True when `--hermes-home` was given on the command line. */
  hermesHomeFromFlag: boolean;
  /** `--cwd`, else the process working directory (absolute): where project discovery starts. */
  cwd: string;
  json: boolean;
  color: boolean;
  out: Printer;
  /** Spinners and bars only on a terminal and never under `--json`. */
  showProgress: boolean;
  /**
   * Bounds for calls into provider code: `importMs` for importing a provider module
   * (`HERMES_MEMORY_IMPORT_TIMEOUT_MS`, default 10000), `hookMs` for each provider hook such as
   * `initializeForInspection`, `stats` or `shutdown` (`HERMES_MEMORY_HOOK_TIMEOUT_MS`, default 15000).
   */
  timeouts: { importMs: number; hookMs: number };
  /**
   * The host's folder of bundled providers, by the rule `openMemory()` applies too
   * (`defaultBundledDir`: `HERMES_MEMORY_BUNDLED_DIR`), so the CLI and a host pick the same
   * provider for a name. Every discovery and load of a command passes it (`discoveryScope`).
   */
  bundledDir?: string;
}

/** Where a command discovers and loads providers: home, cwd, environment and bundled folder. */
export function discoveryScope(ctx: CliContext): { hermesHome: string; cwd: string; env: NodeJS.ProcessEnv; bundledDir?: string } {
  return {
    hermesHome: ctx.hermesHome,
    cwd: ctx.cwd,
    env: ctx.io.env,
    ...(ctx.bundledDir !== undefined ? { bundledDir: ctx.bundledDir } : {}),
  };
}

function timeoutFromEnv(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  const ms = Number(raw);
  return Number.isFinite(ms) && ms > 0 ? ms : fallback;
}

/** Resolve `--hermes-home` / `HERMES_HOME` / `~/.hermes` the same way for every command. */
export function resolveHermesHome(io: CliIo, flag: string | undefined): string {
  if (flag !== undefined && flag.trim() !== "") return path.resolve(io.cwd, expandHome(flag.trim()));
  return defaultHermesHome(io.env);
}

/** Build the context for one command invocation from the parsed global options. */
export function createCliContext(io: CliIo, options: GlobalOptions): CliContext {
  const json = options.json === true;
  const color = colorEnabled(io, options.color !== false);
  const colors = createColors(color);
  const bundledDir = defaultBundledDir(io.env);
  return {
    io,
    hermesHome: resolveHermesHome(io, options.hermesHome),
    hermesHomeFromFlag: options.hermesHome !== undefined && options.hermesHome.trim() !== "",
    cwd: options.cwd ? path.resolve(io.cwd, expandHome(options.cwd)) : io.cwd,
    json,
    color,
    out: new Printer(io, json, colors),
    showProgress: !json && io.stdout.isTTY === true,
    timeouts: {
      importMs: timeoutFromEnv(io.env, "HERMES_MEMORY_IMPORT_TIMEOUT_MS", DEFAULT_IMPORT_TIMEOUT_MS),
      hookMs: timeoutFromEnv(io.env, "HERMES_MEMORY_HOOK_TIMEOUT_MS", DEFAULT_HOOK_TIMEOUT_MS),
    },
    ...(bundledDir !== undefined ? { bundledDir } : {}),
  };
}
