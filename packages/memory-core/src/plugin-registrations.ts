/**
 * What a provider module's `register(ctx)` registers besides the provider and its skills: hooks,
 * tools, commands and any other `register*` call of a general plugin context. The loader collects
 * them (never runs them) and keeps them beside the provider instance; a host reads them with
 * `pluginRegistrationsOf(provider)` or `manager.pluginRegistrations()` and calls into them through
 * `runPluginHook` / `callPluginFunction`, which bound every call.
 */
import { boundedCall, formatSeconds, type BoundedOutcome } from "./bounded-call.js";
import { HermesMemoryError, describeValue } from "./errors.js";
import type { Logger } from "./logger.js";
import { describeProviderError } from "./plugin-describe.js";
import type { MemoryProvider } from "./provider.js";

/** A host function a plugin registered (a hook callback, a tool handler, a command handler). */
export type PluginFunction = (...args: unknown[]) => unknown;

/** `registerHook(name, callback)`: call `callback` when the host reaches hook `name` (e.g. `on_session_end`). */
export interface PluginHookRegistration {
  readonly name: string;
  readonly callback: PluginFunction;
}

/**
 * `registerTool(name, toolset, schema, handler, checkFn?, override?, description?)` (or one object
 * with those keys): a tool the host may offer; `handler(args)` returns the tool result.
 */
export interface PluginToolRegistration {
  readonly name: string;
  readonly toolset: string | null;
  readonly schema: unknown;
  readonly handler: PluginFunction;
  readonly checkFn: PluginFunction | null;
  readonly override: boolean;
  readonly description: string;
}

/** `registerCommand(name, handler, description?)` (or one object): a slash command for the host. */
export interface PluginCommandRegistration {
  readonly name: string;
  readonly handler: PluginFunction;
  readonly description: string;
}

/** Any other `register*` call (`registerAuxiliaryTask`, `registerPlatform`, …): the method (camelCase) and its arguments. */
export interface PluginOtherRegistration {
  readonly method: string;
  readonly args: readonly unknown[];
}

/** Everything one provider module registered besides the provider and its skills (frozen). */
export interface PluginRegistrations {
  /** The provider the registrations belong to. */
  readonly provider: string;
  readonly hooks: readonly PluginHookRegistration[];
  readonly tools: readonly PluginToolRegistration[];
  readonly commands: readonly PluginCommandRegistration[];
  readonly other: readonly PluginOtherRegistration[];
}

const byProvider = new WeakMap<object, PluginRegistrations>();

/** The registrations collected when `provider` was loaded (empty lists when it registered none or was not loaded by `loadMemoryProvider`). */
export function pluginRegistrationsOf(provider: MemoryProvider): PluginRegistrations {
  const found = byProvider.get(provider);
  if (found) return found;
  let name = "";
  try {
    name = typeof provider.name === "string" ? provider.name : "";
  } catch {
    // A name getter that throws names nothing; the empty result still says "no registrations".
  }
  return freezeRegistrations({ provider: name, hooks: [], tools: [], commands: [], other: [] });
}

/** `pluginRegistrationsOf` for each provider, keyed by the name it was loaded under (a frozen record). */
export function pluginRegistrationsByName(providers: Iterable<MemoryProvider>): Readonly<Record<string, PluginRegistrations>> {
  const out: Record<string, PluginRegistrations> = {};
  for (const provider of providers) {
    const registrations = pluginRegistrationsOf(provider);
    if (registrations.provider !== "" && !Object.prototype.hasOwnProperty.call(out, registrations.provider))
      out[registrations.provider] = registrations;
  }
  return Object.freeze(out);
}

/** Keep `registrations` beside the loaded provider instance. */
export function rememberPluginRegistrations(provider: MemoryProvider, registrations: PluginRegistrations): void {
  byProvider.set(provider, registrations);
}

function freezeRegistrations(r: {
  provider: string;
  hooks: PluginHookRegistration[];
  tools: PluginToolRegistration[];
  commands: PluginCommandRegistration[];
  other: PluginOtherRegistration[];
}): PluginRegistrations {
  for (const list of [r.hooks, r.tools, r.commands, r.other]) {
    for (const entry of list) Object.freeze(entry);
    Object.freeze(list);
  }
  return Object.freeze(r);
}

function requireName(value: unknown, what: string): string {
  if (typeof value !== "string" || value.trim() === "")
    throw new TypeError(`${what} must be a non-empty string (got ${describeValue(value)})`);
  return value.trim();
}

function requireFunction(value: unknown, what: string): PluginFunction {
  if (typeof value !== "function") throw new TypeError(`${what} must be a function (got ${value === null ? "null" : typeof value})`);
  return value as PluginFunction;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** camelCase spelling of a registration method (`register_hook` → `registerHook`). */
export function registrationMethodName(method: string): string {
  return method.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** True for a name `register(ctx)` may call as a registration: `registerX…` or `register_x…`. */
export function isRegistrationMethod(name: string): boolean {
  return /^register(?:[A-Z]|_[a-z])[A-Za-z0-9_]*$/.test(name);
}

/**
 * Collects the registrations of one `register(ctx)` run. `call(method, args)` records a call
 * (method in either spelling); a call with invalid arguments is not recorded and is logged as the
 * warning `Memory provider '<n>' failed to <method>: <why>`, never thrown, so a secondary
 * registration never costs the provider.
 */
export class PluginRegistrationCollector {
  private readonly hooks: PluginHookRegistration[] = [];
  private readonly tools: PluginToolRegistration[] = [];
  private readonly commands: PluginCommandRegistration[] = [];
  private readonly other: PluginOtherRegistration[] = [];

  constructor(
    private readonly provider: string,
    private readonly logger: Logger,
  ) {}

  call(method: string, args: unknown[]): void {
    try {
      this.record(registrationMethodName(method), args);
    } catch (error) {
      this.logger.warn(`Memory provider '${this.provider}' failed to ${method}: ${describeProviderError(error)}`);
    }
  }

  private record(method: string, args: unknown[]): void {
    if (method === "registerHook") {
      this.hooks.push({ name: requireName(args[0], "the hook name"), callback: requireFunction(args[1], "the hook callback") });
    } else if (method === "registerTool") {
      const o = isRecord(args[0])
        ? args[0]
        : { name: args[0], toolset: args[1], schema: args[2], handler: args[3], checkFn: args[4], override: args[5], description: args[6] };
      this.tools.push({
        name: requireName(o.name, "the tool name"),
        toolset: typeof o.toolset === "string" ? o.toolset : null,
        schema: o.schema ?? null,
        handler: requireFunction(o.handler, "the tool handler"),
        checkFn: o.checkFn === undefined || o.checkFn === null ? null : requireFunction(o.checkFn, "the tool checkFn"),
        override: o.override === true,
        description: typeof o.description === "string" ? o.description : "",
      });
    } else if (method === "registerCommand") {
      const o = isRecord(args[0]) ? args[0] : { name: args[0], handler: args[1], description: args[2] };
      this.commands.push({
        name: requireName(o.name, "the command name"),
        handler: requireFunction(o.handler, "the command handler"),
        description: typeof o.description === "string" ? o.description : "",
      });
    } else {
      this.other.push({ method, args: Object.freeze([...args]) });
    }
  }

  /** What was collected, frozen. */
  result(): PluginRegistrations {
    return freezeRegistrations({
      provider: this.provider,
      hooks: [...this.hooks],
      tools: [...this.tools],
      commands: [...this.commands],
      other: [...this.other],
    });
  }
}

/** Options of `runPluginHook` / `callPluginFunction`. */
export interface PluginCallOptions {
  /** Upper bound of each call in ms (`Infinity`: unbounded). */
  timeoutMs: number;
  /** Where failures and timeouts are reported (as warnings naming the provider and what was called). */
  logger?: Logger;
}

function checkTimeout(timeoutMs: unknown): number {
  if (typeof timeoutMs !== "number" || Number.isNaN(timeoutMs) || timeoutMs <= 0) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `timeoutMs must be a positive number of milliseconds (got ${String(timeoutMs)}); pass e.g. { timeoutMs: 5000 }.`,
    });
  }
  return timeoutMs;
}

/**
 * Call one registered function (a tool or command handler, a hook callback) with `args`, bounded
 * by `timeoutMs`. Never throws for what the function does: its result, error or timeout comes back
 * as a `BoundedOutcome`, and an error or timeout is also logged as a warning naming `provider` and
 * `what`. Throws `INVALID_ARGUMENT` only for a bad `timeoutMs`.
 */
export async function callPluginFunction(
  provider: string,
  what: string,
  fn: PluginFunction,
  args: readonly unknown[],
  options: PluginCallOptions,
): Promise<BoundedOutcome<unknown>> {
  const timeoutMs = checkTimeout(options.timeoutMs);
  const outcome = await boundedCall(() => fn(...args), timeoutMs);
  if (outcome.status === "error")
    options.logger?.warn(`Memory provider '${provider}' ${what} failed: ${describeProviderError(outcome.error)}`);
  if (outcome.status === "timeout")
    options.logger?.warn(`Memory provider '${provider}' ${what} did not finish within ${formatSeconds(timeoutMs)}; its result is dropped.`);
  return outcome;
}

/**
 * Run every callback registered for hook `name` by the given providers' plugins, one after another
 * in registration order, each bounded by `timeoutMs` (see `callPluginFunction`). A callback that
 * throws or times out is reported and the others still run. Returns one outcome per callback.
 */
export async function runPluginHook(
  registrations: Iterable<PluginRegistrations> | Readonly<Record<string, PluginRegistrations>>,
  name: string,
  args: readonly unknown[],
  options: PluginCallOptions,
): Promise<Array<{ provider: string; outcome: BoundedOutcome<unknown> }>> {
  checkTimeout(options.timeoutMs);
  const all: Iterable<PluginRegistrations> =
    Symbol.iterator in Object(registrations) ? (registrations as Iterable<PluginRegistrations>) : Object.values(registrations);
  const outcomes: Array<{ provider: string; outcome: BoundedOutcome<unknown> }> = [];
  for (const r of all) {
    for (const hook of r.hooks) {
      if (hook.name !== name) continue;
      outcomes.push({
        provider: r.provider,
        outcome: await callPluginFunction(r.provider, `hook '${name}'`, hook.callback, args, options),
      });
    }
  }
  return outcomes;
}
