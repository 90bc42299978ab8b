import fs from "node:fs";
import { describeError, isSearchableMemory, type ChatMessage } from "@hermes/memory-core";
import { fail, pass, skip, type ClauseOutcome, type ContractContext } from "../clause-runner.js";
import { distinctiveToken, type ProviderInstance } from "../provider-harness.js";
import { diffSnapshots, snapshotTree } from "../sandbox.js";

function evidence(tokens: readonly string[]): ChatMessage[] {
  return tokens.map((token, i) =>
    i % 2 === 0
      ? { role: "user", content: `Checkpoint evidence ${i}: the user said ${token}` }
      : { role: "assistant", content: `Checkpoint evidence ${i}: the assistant answered ${token}` },
  );
}

/** How many stored items contain `token`, through `search`. */
async function countStored(instance: ProviderInstance, token: string): Promise<number> {
  const provider = instance.provider;
  if (!isSearchableMemory(provider)) throw new Error("capabilities.search is declared but the provider is not SearchableMemory");
  const hits = await instance.call("search()", () => provider.search(token, { limit: 50 }));
  return new Set(
    (Array.isArray(hits) ? hits : []).filter((h) => typeof h?.content === "string" && h.content.includes(token)).map((h) => h.id),
  ).size;
}

/** `stats().items`, or undefined when the provider does not report a number. */
async function storedItems(instance: ProviderInstance): Promise<number | undefined> {
  const provider = instance.provider;
  if (!isSearchableMemory(provider)) return undefined;
  const stats = await instance.call("stats()", () => provider.stats());
  return typeof stats?.items === "number" ? stats.items : undefined;
}

async function checkpoint(instance: ProviderInstance, messages: ChatMessage[]): Promise<unknown> {
  return instance.call("onPreCompress()", (p) => p.onPreCompress(messages, { requireCheckpoint: true }));
}

/** C-CHECKPOINT-1: the provider declares API v2 and `onPreCompress` returns a string. */
async function declaresVersionTwo(ctx: ContractContext): Promise<ClauseOutcome> {
  const { harness } = ctx;
  const instance = await harness.openInstance("checkpoint-version");
  try {
    const version: unknown = instance.provider.preCompressCheckpointApiVersion;
    if (version !== 2) return fail(`preCompressCheckpointApiVersion is ${JSON.stringify(version)}, expected 2`);
    const result = await checkpoint(instance, evidence([distinctiveToken("ckpt")]));
    if (typeof result !== "string") return fail(`onPreCompress returned ${typeof result}, expected a string`);
    return pass();
  } finally {
    await instance.close();
  }
}

/** C-CHECKPOINT-2: the same evidence checkpointed twice is stored once. */
async function sameEvidenceStoredOnce(ctx: ContractContext): Promise<ClauseOutcome> {
  const { harness } = ctx;
  const instance = await harness.openInstance("checkpoint-same");
  try {
    const tokens = [distinctiveToken("same0x"), distinctiveToken("same1x")];
    await checkpoint(instance, evidence(tokens));
    await harness.settle(instance);
    const first = await countStored(instance, tokens[0]!);
    if (first === 0) return fail("after onPreCompress, search finds nothing of the checkpointed evidence");
    const itemsBefore = await storedItems(instance);
    await checkpoint(instance, evidence(tokens));
    await harness.settle(instance);
    const second = await countStored(instance, tokens[0]!);
    if (second > first) return fail(`the same evidence checkpointed twice is stored ${second} times (was ${first})`);
    const itemsAfter = await storedItems(instance);
    if (itemsBefore !== undefined && itemsAfter !== undefined && itemsAfter > itemsBefore) {
      return fail(`stats().items grew from ${itemsBefore} to ${itemsAfter} when the same evidence was checkpointed again`);
    }
    return pass();
  } finally {
    await instance.close();
  }
}

/** C-CHECKPOINT-3: overlapping evidence stores only its new messages. */
async function overlappingEvidenceAddsOnlyTheNew(ctx: ContractContext): Promise<ClauseOutcome> {
  const { harness } = ctx;
  const instance = await harness.openInstance("checkpoint-overlap");
  try {
    const tokens = Array.from({ length: 6 }, (_, i) => distinctiveToken(`overlap${i}x`));
    await checkpoint(instance, evidence(tokens.slice(0, 4)));
    await harness.settle(instance);
    const before = await countStored(instance, tokens[0]!);
    if (before === 0) return fail("after onPreCompress, search finds nothing of the checkpointed evidence");
    await checkpoint(instance, evidence(tokens));
    await harness.settle(instance);
    const after = await countStored(instance, tokens[0]!);
    const added = await countStored(instance, tokens[4]!);
    if (after > before)
      return fail(`overlapping evidence stored the old messages again (${after} copies of the first message, was ${before})`);
    if (added === 0) return fail("the new part of overlapping evidence was not stored");
    return pass();
  } finally {
    await instance.close();
  }
}

/** C-CHECKPOINT-4: a checkpoint on broken storage throws instead of resolving. */
async function brokenStorageFailsClosed(ctx: ContractContext): Promise<ClauseOutcome> {
  const { harness } = ctx;
  const instance = await harness.openInstance("checkpoint-failure");
  const home = instance.hermesHome;
  const moved = `${home}.moved-away`;
  let generic = false;
  try {
    await checkpoint(instance, evidence([distinctiveToken("warm")]));
    if (ctx.setup.breakStorage) {
      const breakStorage = ctx.setup.breakStorage.bind(ctx.setup);
      await instance.call("breakStorage()", (p) => breakStorage({ provider: p, hermesHome: home }));
    } else {
      // Generic failure: the profile directory becomes a plain file, so opening anything under it fails.
      generic = true;
      fs.renameSync(home, moved);
      fs.writeFileSync(home, "storage deliberately broken by the memory provider contract kit\n");
    }
    const movedBefore = generic ? snapshotTree(moved) : undefined;
    let threw: unknown;
    try {
      await checkpoint(instance, evidence([distinctiveToken("broken")]));
    } catch (error) {
      threw = error ?? new Error("rejected");
    }
    if (threw !== undefined) return pass(`threw: ${describeError(threw)}`);
    if (movedBefore && diffSnapshots(movedBefore, snapshotTree(moved)).length > 0) {
      // The write went through handles opened before the break, so the storage never failed.
      return skip(
        "the provider keeps its files open, so replacing hermesHome did not make its storage fail (the checkpoint was written); pass setup.breakStorage to check this clause",
      );
    }
    if (generic) {
      return fail("onPreCompress resolved although hermesHome had been replaced by a file and nothing was written");
    }
    return fail("onPreCompress resolved although setup.breakStorage had broken the storage");
  } finally {
    if (generic) {
      fs.rmSync(home, { force: true });
      if (fs.existsSync(moved)) fs.renameSync(moved, home);
    }
    await instance.close().catch(() => undefined);
  }
}

/** C-CHECKPOINT-5: each archived message is stored as `<Role>: <text>`. */
async function archivesEachMessageAsText(ctx: ContractContext): Promise<ClauseOutcome> {
  const { harness } = ctx;
  const instance = await harness.openInstance("checkpoint-text");
  try {
    const tokens = [distinctiveToken("ckptxt0x"), distinctiveToken("ckptxt1x")];
    const messages = evidence(tokens);
    await checkpoint(instance, messages);
    await harness.settle(instance);
    for (const [i, token] of tokens.entries()) {
      const provider = instance.provider;
      if (!isSearchableMemory(provider)) throw new Error("capabilities.search is declared but the provider is not SearchableMemory");
      const hits = await instance.call("search()", () => provider.search(token, { limit: 20 }));
      const stored = (Array.isArray(hits) ? hits : [])
        .filter((h) => typeof h?.content === "string" && h.content.includes(token))
        .map((h) => h.content);
      const expected = `${messages[i]!.role === "user" ? "User" : "Assistant"}: ${String(messages[i]!.content)}`;
      if (stored.length === 0) return fail(`after onPreCompress, search(${JSON.stringify(token)}) finds nothing`);
      if (!stored.some((t) => t.split("\n").includes(expected)))
        return fail(`the archived message is stored as ${JSON.stringify(stored[0])}, expected ${JSON.stringify(expected)}`);
    }
    return pass();
  } finally {
    await instance.close().catch(() => undefined);
  }
}

/** CHECKPOINT (API v2): durable, idempotent, fail-closed. */
export async function runCheckpointGroup(ctx: ContractContext): Promise<void> {
  await ctx.clause("C-CHECKPOINT-1", () => declaresVersionTwo(ctx));
  await ctx.clause("C-CHECKPOINT-2", () => sameEvidenceStoredOnce(ctx));
  await ctx.clause("C-CHECKPOINT-3", () => overlappingEvidenceAddsOnlyTheNew(ctx));
  await ctx.clause("C-CHECKPOINT-4", () => brokenStorageFailsClosed(ctx));
  await ctx.clause("C-CHECKPOINT-5", () => archivesEachMessageAsText(ctx));
}
