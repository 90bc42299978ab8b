/**
 * Native modules a provider needs (better-sqlite3, usearch), loaded on first use so the provider
 * itself always imports, and a module whose native addon was never built (its install script did
 * not run: npm's `allowScripts` policy, `--ignore-scripts`, pnpm's build approval; or it was built
 * for another Node.js) fails as one typed error that names the fix, not as a loader's stack.
 */
import { createRequire } from "node:module";
import { HermesMemoryError, describeError } from "@hermes/memory-core";

/** `HermesMemoryError.code` of a native module that is installed but not built for this Node.js. */
export const NATIVE_MODULE_MISSING = "NATIVE_MODULE_MISSING";

// What `bindings` (better-sqlite3), `node-gyp-build` and usearch's own lookup say when no addon
// was built, and what Node says when the one found cannot be loaded here.
const ADDON_FAILURE =
  /Could not locate the bindings file|No native build was found|Could not find native build|compiled against a different Node\.js version|\.node['"]?:? (?:invalid ELF header|cannot open shared object)|wrong ELF class/;

/** True when `error` says a native addon is missing or cannot be loaded by this Node.js. */
export function isNativeAddonFailure(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  if (code === "ERR_DLOPEN_FAILED") return true;
  const message = describeError(error);
  if (code === "MODULE_NOT_FOUND" && /\.node\b/.test(message)) return true;
  return ADDON_FAILURE.test(message);
}

/**
 * The typed error for `module`'s native addon not loading in `packageName`, with the commands that
 * build it for an npm project, a global npm install and pnpm.
 */
export function nativeModuleMissing(module: string, packageName: string, cause: unknown): HermesMemoryError {
  // The loader's first sentence: what follows (the paths `bindings` tried) is noise here.
  const why = describeError(cause)
    .split("\n")[0]!
    .replace(/\.(\s.*)?$/, "")
    .slice(0, 300);
  return new HermesMemoryError({
    code: NATIVE_MODULE_MISSING,
    message:
      `${packageName} needs ${module}, whose native addon is not built for this Node.js (${why}). ` +
      `Its install script did not run (npm's allowScripts policy, --ignore-scripts, pnpm's build approval) or ran for another Node.js. ` +
      `Build it where ${packageName} is installed: in an npm project \`npm install-scripts approve ${module}\` then \`npm rebuild ${module}\`; ` +
      `for a global install \`npm install -g --allow-scripts=${module} ${packageName}\`; with pnpm \`pnpm approve-builds\` then \`pnpm rebuild ${module}\`.`,
    cause,
  });
}

/** A native module loaded on first use; the outcome is remembered. */
export interface NativeModuleLoader<T> {
  /** The module, or `undefined` when it cannot load (`error()` says why). */
  load(): T | undefined;
  /** The module, or throws why it cannot load (`NATIVE_MODULE_MISSING` for an addon that is not built). */
  require(): T;
  /** Why the module failed to load, or `undefined` when it loaded (or was never tried). */
  error(): unknown;
}

/**
 * Load `module` on first use, resolved from `from` (pass the provider's `import.meta.url`, so its
 * own dependency is used). `probe` runs once on the loaded module to reach its native addon (some
 * modules, like better-sqlite3, only load it on first use). A failure to reach the addon becomes
 * `nativeModuleMissing(module, packageName, …)`; any other failure is kept as it was thrown.
 */
export function createNativeModuleLoader<T>(
  from: string | URL,
  module: string,
  packageName: string,
  probe?: (loaded: T) => void,
): NativeModuleLoader<T> {
  let loaded: T | undefined;
  let failure: unknown;
  let tried = false;
  const load = (): T | undefined => {
    if (tried) return loaded;
    tried = true;
    try {
      const candidate = createRequire(from)(module) as T;
      probe?.(candidate);
      loaded = candidate;
    } catch (error) {
      failure = isNativeAddonFailure(error) ? nativeModuleMissing(module, packageName, error) : error;
    }
    return loaded;
  };
  return {
    load,
    require() {
      const value = load();
      if (value === undefined) throw failure;
      return value;
    },
    error: () => failure,
  };
}
