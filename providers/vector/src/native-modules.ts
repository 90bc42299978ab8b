/**
 * The native modules this provider needs, loaded on first use through the kit, so the package
 * always imports and an addon that was never built (install scripts not run) is one typed
 * `NATIVE_MODULE_MISSING` error naming the fix: better-sqlite3 for every store (the sidecar, the
 * outboxes), usearch for the local store.
 */
import type UsearchModule from "usearch";
import { HermesMemoryError, describeError } from "@hermes/memory-core";
import { createNativeModuleLoader } from "@hermes/memory-provider-kit";
import { createSqliteDriverLoader } from "@hermes/memory-provider-kit/sqlite";
import type { StoreKind } from "./vector-config.js";

const PACKAGE_NAME = "@hermes/memory-vector";

/** usearch's module: `Index`, `MetricKind`, `ScalarKind`, `exactSearch`. */
export type Usearch = typeof UsearchModule;

const usearchLoader = createNativeModuleLoader<Usearch>(import.meta.url, "usearch", PACKAGE_NAME);
const sqliteDriverLoader = createSqliteDriverLoader(import.meta.url, PACKAGE_NAME);

/** usearch, loaded on first use; throws `NATIVE_MODULE_MISSING` when its addon is not built. */
export function loadUsearch(): Usearch {
  return usearchLoader.require();
}

/**
 * Why a native module the `store` needs cannot load, as a typed error (`NATIVE_MODULE_MISSING`
 * with the fix, or `PROVIDER_UNAVAILABLE` for any other failure); `null` when they all load.
 */
export function nativeModuleProblem(store: StoreKind): HermesMemoryError | null {
  const failed = !sqliteDriverLoader.load()
    ? sqliteDriverLoader.error()
    : store === "local" && !usearchLoader.load()
      ? usearchLoader.error()
      : null;
  if (failed === null) return null;
  if (HermesMemoryError.isInstance(failed)) return failed;
  return new HermesMemoryError({
    code: "PROVIDER_UNAVAILABLE",
    message: `${describeError(failed)}; reinstall ${PACKAGE_NAME}.`,
    cause: failed,
  });
}
