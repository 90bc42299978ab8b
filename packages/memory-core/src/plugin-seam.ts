/**
 * The plugin seam, typed once: what a provider module's `register(ctx)` receives, and what a
 * provider's CLI module's `registerCli(command, context)` receives. Providers and the scaffolder's
 * template import these types (type-only) instead of declaring their own copies.
 */
import type { Logger } from "./logger.js";
import type { MemoryProvider } from "./provider.js";

/**
 * What a provider module's `register(ctx)` receives when the loader imports it. Call
 * `registerMemoryProvider` once with the provider instance; `registerSkill` adds a read-only skill
 * `<provider>:<name>` (kept only when the provider is the active one); the other `register*`
 * calls are collected for the host (see `registerHook`). `register` must not start background
 * work or open connections: that belongs in the provider's `initialize()`.
 */
export interface MemoryProviderRegistrationContext {
  /** The name the provider was discovered under; the registered provider's `name` must equal it. */
  readonly providerName: string;
  /** The active profile home (absolute). */
  readonly hermesHome: string;
  /**
   * The host's logger. A provider that reports background failures (writes it could not store, a
   * store it had to reopen) should log them here, e.g. `new MyProvider({ logger: ctx.logger })`:
   * a provider built without it logs to nobody.
   */
  readonly logger: Logger;
  /** Hand the loader the provider instance. Throws `INVALID_PROVIDER` for anything else. */
  registerMemoryProvider(provider: MemoryProvider): void;
  /** Register a read-only skill file (`path` relative to the provider folder). */
  registerSkill(name: string, path: string, description?: string): void;
  /**
   * The other registrations of a general plugin context are collected, never run by the loader,
   * and offered to the host beside the provider (`pluginRegistrationsOf(provider)`,
   * `manager.pluginRegistrations()`; call them bounded with `runPluginHook` / `callPluginFunction`).
   * `registerHook(name, callback)` adds a hook callback (`hooks`); callbacks should accept one
   * options object and ignore keys they do not know.
   */
  registerHook(name: string, callback: (...args: unknown[]) => unknown): void;
  /**
   * `registerTool(name, toolset, schema, handler, checkFn?, override?, description?)`, or one object
   * with those keys: a tool the host may offer (`tools`); `handler(args)` returns the result.
   */
  registerTool(...args: unknown[]): void;
  /** `registerCommand(name, handler, description?)`, or one object with those keys: a slash command (`commands`). */
  registerCommand(...args: unknown[]): void;
  /** Collected under `other` like every unlisted `register*` call; provider CLI commands come from `registerCli`. */
  registerCliCommand(...args: unknown[]): void;
  /**
   * Collected under `other` (`{ method, args }`), as is any other `registerX` / `register_x` call
   * (`registerDashboardAuthProvider`, `registerContextEngine`, `registerPlatform`,
   * `registerImageGenProvider`, …). Every registration also has its snake_case spelling
   * (`register_hook`). A call with invalid arguments (a hook without a callback, a tool without a
   * name) is dropped with the warning `Memory provider '<n>' failed to <method>: <why>` and never
   * fails the load. Reading a name that is neither a member above nor `register*` throws
   * `INVALID_ARGUMENT` naming it, so a typo fails loudly.
   */
  registerAuxiliaryTask(...args: unknown[]): void;
  /** Collected under `other` (see `registerAuxiliaryTask`). */
  registerDashboardAuthProvider(...args: unknown[]): void;
  /** Collected under `other` (see `registerAuxiliaryTask`). */
  registerContextEngine(...args: unknown[]): void;
  /** Collected under `other` (see `registerAuxiliaryTask`). */
  registerPlatform(...args: unknown[]): void;
  /** Collected under `other` (see `registerAuxiliaryTask`). */
  registerImageGenProvider(...args: unknown[]): void;
}

/**
 * Where a provider's CLI commands may write instead of `process.stdout` / `process.stderr`, so a
 * host running the CLI in-process (tests, an embedding app) can capture the output. Text is
 * written as given (no newline is added).
 */
export interface ProviderCliIo {
  /** Write to standard output (results; the JSON document under `--json`). */
  stdout(text: string): void;
  /** Write to standard error (warnings, progress). */
  stderr(text: string): void;
  /** Standard error is an interactive terminal (progress bars and prompts make sense). */
  readonly isTTY: boolean;
  /**
   * Ask the user a yes/no question on the terminal; resolves to false when they decline or cancel.
   * Absent when the host cannot ask (no terminal, or a host without prompts): a command that needs
   * a confirmation must then refuse unless the user passed `--yes`.
   */
  confirm?(question: string): Promise<boolean>;
  /**
   * Start a progress bar labelled `label` for a long command (an import, a migration, a
   * reindex), drawn by the host on standard error. Absent when the host draws none (not a
   * terminal, `--json`, or a host without bars): run without one. Call `stop()` when the work
   * ends, also when it fails; the bar is then erased.
   */
  progress?(label: string): ProviderCliProgress;
}

/** A progress bar the host draws for a provider command (`ProviderCliIo.progress`). */
export interface ProviderCliProgress {
  /** `done` of `total` items are finished (`total` may grow as the command learns more). */
  update(done: number, total: number): void;
  /** The work ended (finished or failed): erase the bar. Idempotent. */
  stop(): void;
}

/**
 * What the host passes as the second argument of a provider's `registerCli(command, context)`.
 * `hermesHome` and `providerName` are always present; the `hermes-memory` CLI also passes the
 * rest, which another host may omit — a provider CLI must work without them (fall back to the
 * process streams and plain output). Read it when commands run; do not keep state in it.
 */
export interface ProviderCliContext {
  /** The active profile home (absolute). */
  readonly hermesHome: string;
  /** The provider's name, which is also the host command the subcommands are added under. */
  readonly providerName: string;
  /** The working directory the host resolved (`--cwd`). */
  readonly cwd?: string;
  /** The host's global `--json` was given: print one JSON document on stdout. */
  readonly json?: boolean;
  /** Colours are allowed. */
  readonly color?: boolean;
  /** Spinners and progress bars are allowed (a TTY and not `--json`). */
  readonly showProgress?: boolean;
  /** The host's output streams. */
  readonly io?: ProviderCliIo;
}

/**
 * The function a provider's CLI module exports as `registerCli`: adds subcommands to `command`
 * (a commander `Command` the host CLI created for the provider; typed `unknown` so core does not
 * depend on commander). Called while the host builds its command line, only for the active
 * provider: it must not open stores or do network work — do that in the subcommands' actions.
 */
export type RegisterCli = (command: unknown, context: ProviderCliContext) => void | Promise<void>;
