import { AsyncLocalStorage } from "node:async_hooks";
import os from "node:os";
import path from "node:path";

interface ProfileScope {
  hermesHome: string;
}

// One scope per process, shared by every copy of this package: a provider installed with its own
// copy of core (npm gives each global package its own peers) must see the host's profile.
const SCOPE_KEY = Symbol.for("@hermes/memory.profile-scope");
const scope = ((globalThis as Record<symbol, unknown>)[SCOPE_KEY] ??=
  new AsyncLocalStorage<ProfileScope>()) as AsyncLocalStorage<ProfileScope>;

/**
 * The default home when no profile is scoped: `HERMES_HOME` if set and non-blank, else `~/.hermes`.
 * This is the only place that reads `HERMES_HOME` from the environment.
 */
export function defaultHermesHome(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.HERMES_HOME?.trim();
  if (fromEnv) return path.resolve(expandHome(fromEnv));
  return path.join(os.homedir(), ".hermes");
}

/**
 * The active profile's home: the innermost `runWithProfile` scope, else `defaultHermesHome()`.
 * Resolve it when work is scheduled (or capture it with `bindProfile`), never lazily at write time
 * from a context that may have lost the scope.
 */
export function getHermesHome(): string {
  return scope.getStore()?.hermesHome ?? defaultHermesHome();
}

/**
 * Run `fn` with `home` as the active profile. Everything `fn` starts — awaits, timers, promises —
 * sees the same home through `getHermesHome()`, even when other profiles run concurrently.
 */
export function runWithProfile<T>(home: string, fn: () => T): T {
  return scope.run({ hermesHome: path.resolve(expandHome(home)) }, fn);
}

/**
 * Capture the caller's profile scope now and return a function that re-enters it when called
 * later (queues, worker callbacks, event handlers). Work sent to a worker thread must carry the
 * home explicitly instead.
 */
export function bindProfile<A extends unknown[], R>(fn: (...args: A) => R): (...args: A) => R {
  const captured = scope.getStore();
  if (!captured) return fn;
  return (...args: A) => scope.run(captured, () => fn(...args));
}

/** Expand a leading `~` to the user's home directory. */
export function expandHome(p: string): string {
  if (p === "~") return os.homedir();
  if (p.startsWith("~/") || p.startsWith("~\\")) return path.join(os.homedir(), p.slice(2));
  return p;
}
