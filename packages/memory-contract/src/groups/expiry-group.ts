import { fail, pass, type ContractContext } from "../clause-runner.js";
import { distinctiveToken } from "../provider-harness.js";
import { mentions, searchableClause, sleep } from "./searchable-support.js";

/** Time to live of the short-lived item: long enough to write, flush and read it back first. */
export const SHORT_TTL_MS = 1_500;

/** EXPIRY: a short-lived item disappears from search and get when it expires, and purgeExpired counts it. */
export async function runExpiryGroup(ctx: ContractContext): Promise<void> {
  await searchableClause(ctx, "C-EXPIRY-1", "expiry", async (probe) => {
    const shortToken = distinctiveToken("expiryshort");
    const lastingToken = distinctiveToken("expirylasting");
    const written = Date.now();
    const shortId = await probe.remember({ content: `Short-lived note ${shortToken}`, ttlMs: SHORT_TTL_MS });
    const lastingId = await probe.remember({ content: `Lasting note ${lastingToken}` });
    await probe.settle();
    const beforeSearch = mentions(await probe.search(shortToken, { limit: 10 }), shortToken);
    const beforeGet = (await probe.get(shortId)) !== null;
    const elapsed = Date.now() - written;
    if (!beforeSearch || !beforeGet) {
      const missing = [beforeSearch ? "" : "search", beforeGet ? "" : "get"].filter(Boolean).join(" and ");
      const late = elapsed >= SHORT_TTL_MS ? ` (but writing and flushing took ${elapsed} ms, longer than the ${SHORT_TTL_MS} ms ttl)` : "";
      return fail(`an item with ttlMs ${SHORT_TTL_MS} was not returned by ${missing} ${elapsed} ms after remember(), before it expired${late}`);
    }
    await sleep(Math.max(0, written + SHORT_TTL_MS + 200 - Date.now()));
    const problems: string[] = [];
    if (mentions(await probe.search(shortToken, { limit: 10 }), shortToken)) problems.push("search still returns it after it expired");
    if ((await probe.get(shortId)) !== null) problems.push("get() still returns it after it expired");
    const purged = await probe.instance.call("purgeExpired()", () => probe.memory.purgeExpired!());
    if (purged !== 1) problems.push(`purgeExpired() returned ${JSON.stringify(purged)}, not 1 (one item had expired)`);
    const again = await probe.instance.call("second purgeExpired()", () => probe.memory.purgeExpired!());
    if (again !== 0) problems.push(`a second purgeExpired() returned ${JSON.stringify(again)}, not 0`);
    if (mentions(await probe.search(shortToken, { limit: 10 }), shortToken)) problems.push("search returns it after purgeExpired()");
    if (!mentions(await probe.search(lastingToken, { limit: 10 }), lastingToken) || (await probe.get(lastingId)) === null) {
      problems.push("the item without an expiry was lost");
    }
    return problems.length > 0 ? fail(`with ttlMs ${SHORT_TTL_MS}: ${problems.join("; ")}`) : pass();
  });
}
