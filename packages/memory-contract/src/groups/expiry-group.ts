import { fail, pass, type ContractContext } from "../clause-runner.js";
import { distinctiveToken } from "../provider-harness.js";
import { mentions, searchableClause, sleep } from "./searchable-support.js";

/** Time to live of the short-lived item: long enough to write, flush and read it back first. */
export const SHORT_TTL_MS = 1_500;
/** Longest time to live tried when writing and flushing took longer than the short one. */
const LONGEST_TTL_MS = 15_000;

/** EXPIRY: a short-lived item disappears from search and get when it expires, and purgeExpired counts it. */
export async function runExpiryGroup(ctx: ContractContext): Promise<void> {
  await searchableClause(ctx, "C-EXPIRY-1", "expiry", async (probe) => {
    const lastingToken = distinctiveToken("expirylasting");
    const lastingId = await probe.remember({ content: `Lasting note ${lastingToken}` });
    // A provider slower to write and flush than the ttl gets one more try with a ttl that fits.
    let ttl = SHORT_TTL_MS;
    for (;;) {
      const shortToken = distinctiveToken("expiryshort");
      const written = Date.now();
      const shortId = await probe.remember({ content: `Short-lived note ${shortToken}`, ttlMs: ttl });
      await probe.settle();
      const beforeSearch = mentions(await probe.search(shortToken, { limit: 10 }), shortToken);
      const beforeGet = (await probe.get(shortId)) !== null;
      const elapsed = Date.now() - written;
      if (!beforeSearch || !beforeGet) {
        if (elapsed >= ttl * 0.8 && ttl < LONGEST_TTL_MS) {
          ttl = Math.min(LONGEST_TTL_MS, Math.max(3 * elapsed, 2 * ttl));
          continue;
        }
        const missing = [beforeSearch ? "" : "search", beforeGet ? "" : "get"].filter(Boolean).join(" and ");
        return fail(`an item with ttlMs ${ttl} was not returned by ${missing} ${elapsed} ms after remember(), before it expired`);
      }
      await sleep(Math.max(0, written + ttl + 200 - Date.now()));
      const problems: string[] = [];
      if (mentions(await probe.search(shortToken, { limit: 10 }), shortToken)) problems.push("search still returns it after it expired");
      if ((await probe.get(shortId)) !== null) problems.push("get() still returns it after it expired");
      const purged = await probe.instance.call("purgeExpired()", () => probe.memory.purgeExpired!());
      // Items of an earlier, too-short try have expired as well.
      const expected = ttl === SHORT_TTL_MS ? 1 : undefined;
      if (expected !== undefined ? purged !== expected : !(typeof purged === "number" && purged >= 1)) {
        problems.push(
          `purgeExpired() returned ${JSON.stringify(purged)}, not ${expected ?? "at least 1"} (the expired item${expected === 1 ? "" : "s"})`,
        );
      }
      const again = await probe.instance.call("second purgeExpired()", () => probe.memory.purgeExpired!());
      if (again !== 0) problems.push(`a second purgeExpired() returned ${JSON.stringify(again)}, not 0`);
      if (mentions(await probe.search(shortToken, { limit: 10 }), shortToken)) problems.push("search returns it after purgeExpired()");
      if (!mentions(await probe.search(lastingToken, { limit: 10 }), lastingToken) || (await probe.get(lastingId)) === null) {
        problems.push("the item without an expiry was lost");
      }
      if (problems.length > 0) return fail(`with ttlMs ${ttl}: ${problems.join("; ")}`);
      return pass(ttl === SHORT_TTL_MS ? undefined : `ttlMs ${ttl}: writing and flushing took longer than ${SHORT_TTL_MS} ms`);
    }
  });
}
