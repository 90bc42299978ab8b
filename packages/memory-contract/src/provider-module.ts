import { pathToFileURL } from "node:url";
import { HermesMemoryError, describeError, isMemoryProvider, isMemoryProviderClass, type MemoryProvider } from "@hermes/memory-core";

/** What importing a provider entry and calling its `register(ctx)` produced. */
export interface ModuleRegistration {
  /** Every provider passed to `ctx.registerMemoryProvider`, in order. */
  registered: unknown[];
  /** How the provider was obtained. */
  via: "register" | "default-instance" | "default-class" | "none";
  /** A throw from `register(ctx)`, if any. */
  registerError?: unknown;
}

/**
 * Import `entryFile` and collect what its `register(ctx)` registers, falling back to a default
 * export that is a provider instance or class (the loader's fallbacks). Throws
 * `PROVIDER_LOAD_FAILED` when the import itself fails.
 */
export async function collectModuleRegistration(entryFile: string, providerName: string, hermesHome: string): Promise<ModuleRegistration> {
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(entryFile).href)) as Record<string, unknown>;
  } catch (error) {
    throw new HermesMemoryError({
      code: "PROVIDER_LOAD_FAILED",
      message: `Importing ${entryFile} failed: ${describeError(error)}. Build the package and install its dependencies.`,
      cause: error,
    });
  }
  const registered: unknown[] = [];
  if (typeof mod.register === "function") {
    const ctx = {
      providerName,
      hermesHome,
      registerMemoryProvider: (p: unknown) => void registered.push(p),
      registerSkill: () => undefined,
    };
    try {
      await (mod.register as (c: typeof ctx) => unknown)(ctx);
    } catch (registerError) {
      return { registered, via: "register", registerError };
    }
    return { registered, via: "register" };
  }
  if (isMemoryProvider(mod.default)) return { registered: [mod.default], via: "default-instance" };
  if (isMemoryProviderClass(mod.default)) return { registered: [new mod.default()], via: "default-class" };
  return { registered, via: "none" };
}

/**
 * Import a provider module and return one new provider instance (used when core's loader is not
 * available). Throws `PROVIDER_LOAD_FAILED` when the module provides none.
 */
export async function loadProviderFromEntry(entryFile: string, providerName: string, hermesHome: string): Promise<MemoryProvider> {
  const { registered, registerError } = await collectModuleRegistration(entryFile, providerName, hermesHome);
  const provider = registered.find(isMemoryProvider);
  if (!provider) {
    throw new HermesMemoryError({
      code: "PROVIDER_LOAD_FAILED",
      message: `${entryFile} registered no MemoryProvider${registerError ? ` (register threw: ${describeError(registerError)})` : ""}. Export register(ctx) that calls ctx.registerMemoryProvider(new YourProvider()).`,
      cause: registerError,
    });
  }
  return provider;
}
