import { fail, pass, type ContractContext } from "../clause-runner.js";
import { distinctiveToken } from "../provider-harness.js";
import { searchableClause } from "./searchable-support.js";

/** UPDATE: update() rewrites an item in every index and replaces its tags and metadata. */
export async function runUpdateGroup(ctx: ContractContext): Promise<void> {
  await searchableClause(ctx, "C-UPDATE-1", "update", async (probe) => {
    const oldToken = distinctiveToken("updateold");
    const newToken = distinctiveToken("updatenew");
    const id = await probe.remember({
      content: `Update probe before the change: ${oldToken}`,
      tags: ["alpha"],
      metadata: { version: 1, stale: "yes" },
    });
    const other = await probe.remember({ content: `Update probe bystander: ${oldToken}` });
    await probe.settle();
    const changed = await probe.instance.call("update()", () =>
      probe.memory.update!(id, { content: `Update probe after the change: ${newToken}`, tags: ["beta"], metadata: { version: 2 } }),
    );
    const problems: string[] = [];
    if (changed !== true) problems.push(`update() of an existing item returned ${JSON.stringify(changed)}, not true`);
    await probe.settle();
    const oldHits = await probe.search(oldToken, { limit: 10 });
    if (
      oldHits.some((h) => String(h.id) === id && h.content.includes(oldToken)) ||
      oldHits.filter((h) => h.content.includes(oldToken)).length > 1
    ) {
      problems.push("search for the old text still returns the updated item with its old text");
    }
    if (!oldHits.some((h) => String(h.id) === other)) problems.push("an item update() did not touch is no longer found");
    const newHits = await probe.search(newToken, { limit: 10 });
    if (!newHits.some((h) => String(h.id) === id && h.content.includes(newToken)))
      problems.push("search for the new text does not return the updated item");
    const got = await probe.get(id);
    if (!got) problems.push("get() no longer returns the updated item");
    else {
      if (!got.content.includes(newToken)) problems.push(`get() returns the old content ${JSON.stringify(got.content.slice(0, 60))}`);
      if (JSON.stringify(got.tags ?? []) !== JSON.stringify(["beta"]))
        problems.push(`tags are ${JSON.stringify(got.tags ?? [])}, not ["beta"] (tags are replaced)`);
      if (got.metadata?.version !== 2 || "stale" in (got.metadata ?? {})) {
        problems.push(
          `metadata is ${JSON.stringify(got.metadata)}; update({metadata: {version: 2}}) replaces it, so version must be 2 and "stale" gone`,
        );
      }
    }
    const missing = await probe.instance.call("update() of an unknown id", () =>
      probe.memory.update!(`contract-missing-${newToken}`, { content: "nothing" }),
    );
    if (missing !== false) problems.push(`update() of an id that does not exist returned ${JSON.stringify(missing)}, not false`);
    return problems.length > 0 ? fail(problems.join("; ")) : pass();
  });
}
