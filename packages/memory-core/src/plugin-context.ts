import { closestNames } from "./closest-names.js";
import { HermesMemoryError } from "./errors.js";
import type { Logger } from "./logger.js";
import { isRegistrationMethod, type PluginRegistrationCollector } from "./plugin-registrations.js";
import type { MemoryProviderRegistrationContext } from "./plugin-seam.js";
import type { MemoryProvider } from "./provider.js";

/** What the loader itself implements on `ctx`; every other `register*` call is collected. */
export interface RegistrationContextBase {
  providerName: string;
  hermesHome: string;
  logger: Logger;
  registerMemoryProvider(provider: MemoryProvider): void;
  registerSkill(name: string, path: string, description?: string): void;
}

// Names that generic code reads on any object to ask what it is (await, JSON, test matchers, React,
// DOM checks): reading them must not count as a typo.
const PROBES = new Set(["then", "toJSON", "asymmetricMatch", "$$typeof", "nodeType", "inspect"]);

/**
 * The `ctx` handed to a provider module's `register(ctx)`: the base members (also spelled
 * `register_memory_provider` / `register_skill`), and every other `registerX` / `register_x`
 * method, which records its call in `collector`. Reading any other name throws `INVALID_ARGUMENT`
 * naming it (a typo fails loudly instead of yielding `undefined`). The context cannot be changed.
 */
export function registrationContext(
  base: RegistrationContextBase,
  collector: PluginRegistrationCollector,
): MemoryProviderRegistrationContext {
  const target = Object.freeze({
    ...base,
    register_memory_provider: base.registerMemoryProvider,
    register_skill: base.registerSkill,
  });
  const collectors = new Map<string, (...args: unknown[]) => void>();
  const collectorFor = (method: string) => {
    let fn = collectors.get(method);
    if (!fn) {
      fn = (...args: unknown[]): void => collector.call(method, args);
      collectors.set(method, fn);
    }
    return fn;
  };
  const proxy = new Proxy(target, {
    get(t, key, receiver) {
      if (typeof key === "symbol" || Reflect.has(t, key)) return Reflect.get(t, key, receiver) as unknown;
      if (isRegistrationMethod(key)) return collectorFor(key);
      if (PROBES.has(key) || key.startsWith("@@")) return undefined;
      const close = closestNames(key, [...Object.keys(t), "registerHook", "registerTool", "registerCommand"]);
      const meant = close.length > 0 ? ` Did you mean ${close.map((n) => `'${n}'`).join(" or ")}?` : "";
      throw new HermesMemoryError({
        code: "INVALID_ARGUMENT",
        message: `register(ctx) of memory provider '${base.providerName}' read ctx.${key}, which does not exist.${meant} ctx offers providerName, hermesHome, logger, registerMemoryProvider, registerSkill and any other register* registration (registerHook, registerTool, registerCommand, …).`,
      });
    },
    has(t, key) {
      return Reflect.has(t, key) || (typeof key === "string" && isRegistrationMethod(key));
    },
  });
  return proxy as unknown as MemoryProviderRegistrationContext;
}
