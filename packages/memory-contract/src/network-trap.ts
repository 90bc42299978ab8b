import dns from "node:dns";
import http from "node:http";
import https from "node:https";
import { syncBuiltinESMExports } from "node:module";
import net from "node:net";

/** One network attempt caught by the trap. */
export interface NetworkAttempt {
  /** e.g. `fetch`, `http.request`, `dns.lookup`. */
  api: string;
  /** What was asked for, when it can be told (URL, host). */
  target: string;
}

type Patch = { owner: Record<string, unknown>; key: string; original: unknown };

function describeTarget(args: unknown[]): string {
  const first = args[0];
  if (typeof first === "string") return first;
  if (first instanceof URL) return first.href;
  if (first && typeof first === "object") {
    const o = first as Record<string, unknown>;
    if (typeof o.url === "string") return o.url;
    const host = o.hostname ?? o.host ?? o.path;
    if (host !== undefined) return `${String(host)}${o.port !== undefined ? `:${String(o.port)}` : ""}`;
  }
  if (typeof first === "number") return `port ${first}`;
  return "(unknown target)";
}

/**
 * Run `fn` with the network entry points replaced by recorders that throw: `globalThis.fetch`,
 * `http.request/get`, `https.request/get`, `net.connect/createConnection` and `dns.lookup`.
 * ESM named imports of these builtins are re-synced, so `import { request } from "node:http"`
 * is trapped too. Everything is restored before this resolves.
 *
 * Only for synchronous-by-contract methods (isAvailable, getToolSchemas, getConfigSchema):
 * the trap is global while `fn` runs.
 */
export function withNetworkTrap<T>(fn: () => T): { value?: T; error?: unknown; attempts: NetworkAttempt[] } {
  const attempts: NetworkAttempt[] = [];
  const patches: Patch[] = [];
  const trap = (owner: object, key: string, api: string, async = false): void => {
    const record = owner as Record<string, unknown>;
    patches.push({ owner: record, key, original: record[key] });
    record[key] = (...args: unknown[]) => {
      attempts.push({ api, target: describeTarget(args) });
      const error = new Error(`network access (${api}) is not allowed here: the memory provider contract forbids it`);
      if (async) {
        const rejected = Promise.reject(error);
        // Marked handled so a fire-and-forget call does not crash the host with an unhandled rejection.
        rejected.catch(() => undefined);
        return rejected;
      }
      throw error;
    };
  };
  if (typeof globalThis.fetch === "function") trap(globalThis, "fetch", "fetch", true);
  trap(http, "request", "http.request");
  trap(http, "get", "http.get");
  trap(https, "request", "https.request");
  trap(https, "get", "https.get");
  trap(net, "connect", "net.connect");
  trap(net, "createConnection", "net.createConnection");
  trap(dns, "lookup", "dns.lookup");
  trap(dns.promises, "lookup", "dns.promises.lookup", true);
  syncBuiltinESMExports();
  try {
    return { value: fn(), attempts };
  } catch (error) {
    return { error, attempts };
  } finally {
    for (const p of patches.reverse()) p.owner[p.key] = p.original;
    syncBuiltinESMExports();
  }
}
