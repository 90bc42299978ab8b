import { describeError, type MemoryHit } from "@hermes/memory-core";
import { fail, pass, skip, type ClauseOutcome, type ContractContext } from "../clause-runner.js";
import { boundaryArguments, parameterRole, type BoundaryTarget } from "../boundary-arguments.js";
import { distinctiveToken, ProviderCallTimeoutError, type ProviderInstance } from "../provider-harness.js";
import { unwrapToolSchema } from "../tool-schema-checks.js";
import { searchableOf } from "./searchable-support.js";

const OWNER = "contract-boundary-owner";
const INTRUDER = "contract-boundary-intruder";
/** One item of each kind, in the order tools list kinds, so enum values cycled per item match its kind. */
const KINDS = ["turn", "fact", "checkpoint"] as const;
/** Problems written out in a failure; the rest are counted. */
const MAX_LISTED = 6;
/** Tool calls that may hang before the clause stops calling (each costs the call timeout). */
const MAX_TIMEOUTS = 2;

/** One of the owner's items: its id, a word the intruder's tools are given, and a word never sent anywhere. */
interface OwnerItem {
  id: string;
  word: string;
  /** Appears in an intruder's answer only if the item leaked. */
  secret: string;
  /** What `get()` said before the intruder's calls (SearchableMemory only). */
  before?: string;
}

/** What the owner stored: the items the intruder aims at, an id no item has any more (`ghost`), and how to read them back. */
interface Stored {
  items: OwnerItem[];
  ghost?: OwnerItem;
  /** `api`: each item is read back by `get(id)`; `tools`: by the secret words in `readBack` (search or recall). */
  through: "api" | "tools";
  readBack?: string[];
}

interface Tool {
  name: string;
  parameters: unknown;
}

/** The tools a provider declares, by name (unnamed entries are C-TOOLS-1's business). */
function toolsOf(schemas: unknown): Tool[] {
  if (!Array.isArray(schemas)) return [];
  return schemas
    .map((s) => unwrapToolSchema(s) as { name?: unknown; parameters?: unknown } | null)
    .filter((t): t is { name: string; parameters?: unknown } => typeof t?.name === "string" && t.name !== "")
    .map((t) => ({ name: t.name, parameters: t.parameters }));
}

/** The fields of a hit that no tool call of another user may change. */
function snapshot(hit: MemoryHit | null): string | undefined {
  if (!hit) return undefined;
  return JSON.stringify([
    hit.content,
    hit.kind,
    hit.userId ?? null,
    hit.sessionId ?? null,
    [...(hit.tags ?? [])].sort(),
    hit.expiresAt ?? null,
  ]);
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** `answer` with standalone occurrences of the item's id and word replaced, so answers about two items compare. */
function normalised(answer: string, item: OwnerItem): string {
  let out = answer;
  for (const [value, mark] of [
    [item.id, "<id>"],
    [item.word, "<word>"],
  ] as const) {
    out = out.replace(new RegExp(`(?<![A-Za-z0-9])${escapeRegExp(value)}(?![A-Za-z0-9])`, "g"), mark);
  }
  return out;
}

/** Every string and number in a JSON value (the arguments a call sent), as text. */
function leaves(value: unknown, out: string[] = []): string[] {
  if (typeof value === "string" || typeof value === "number") out.push(String(value));
  else if (Array.isArray(value)) for (const v of value) leaves(v, out);
  else if (value !== null && typeof value === "object") for (const v of Object.values(value)) leaves(v, out);
  return out;
}

/**
 * What an answer of the intruder's session shows of the owner's items: their secret words, or
 * their ids as the value of an id field (a JSON answer; in plain text, ids of 8 characters or more
 * anywhere). Ids the call itself sent are echoes, not leaks; text fields are not read for ids, as
 * they may hold what the intruder stored itself (an id it was given as text, say).
 */
function leaksIn(answer: string, args: Record<string, unknown>, items: readonly OwnerItem[]): string[] {
  const found: string[] = [];
  for (const item of items)
    if (answer.includes(item.secret)) found.push(`the text of the owner's item ${item.id || `with the marker ${item.word}`}`);
  const sent = new Set(leaves(args));
  const named = idsIn(answer);
  for (const item of items) {
    if (item.id === "" || sent.has(item.id)) continue;
    if (named ? named.has(item.id) : item.id.length >= 8 && answer.includes(item.id)) found.push(`the owner's id ${item.id}`);
  }
  return found;
}

/** The owner stores three items (one of each kind) and a ghost it forgets again, through `remember()`. */
async function storeThroughApi(owner: ProviderInstance, ctx: ContractContext): Promise<Stored> {
  const memory = searchableOf(owner);
  const remember = (kind: (typeof KINDS)[number], word: string, secret: string): Promise<string> =>
    owner.call("remember()", () =>
      memory.remember({
        content: `Private note of the owner: ${word} ${secret}`,
        kind,
        userId: OWNER,
        sessionId: owner.sessionId,
        tags: ["contract-boundary"],
        metadata: { marker: word },
      }),
    );
  // The ghost is stored first, so a store that hands out the next free number never gives its id to a later item.
  const ghost: OwnerItem = { id: "", word: distinctiveToken("ghostword"), secret: distinctiveToken("ghostsecret") };
  ghost.id = String(await remember("fact", ghost.word, ghost.secret));
  const items: OwnerItem[] = [];
  for (const kind of KINDS) {
    const item: OwnerItem = { id: "", word: distinctiveToken("ownerword"), secret: distinctiveToken("ownersecret") };
    item.id = String(await remember(kind, item.word, item.secret));
    items.push(item);
  }
  await ctx.harness.settle(owner);
  await owner.call("forget()", () => memory.forget(ghost.id));
  await ctx.harness.settle(owner);
  for (const item of items) item.before = snapshot(await owner.call("get()", () => memory.get(item.id)));
  const ghostGone = (await owner.call("get()", () => memory.get(ghost.id))) === null;
  return { items, ...(ghostGone ? { ghost } : {}), through: "api" };
}

/**
 * The owner stores through its own tools: every tool is called with marker and secret words in
 * every text. The intruder aims at the ids the answers name, each paired with the words; only
 * words that read back (search or recall) are required to survive, so items are those words.
 */
async function storeThroughTools(
  owner: ProviderInstance,
  ctx: ContractContext,
  tools: readonly Tool[],
  caller: ToolCaller,
): Promise<Stored> {
  const words = KINDS.map(() => ({ word: distinctiveToken("ownerword"), secret: distinctiveToken("ownersecret") }));
  const ids = new Set<string>();
  for (const tool of tools) {
    for (const [i, { word, secret }] of words.entries()) {
      const target: BoundaryTarget = { userId: OWNER, sessionId: owner.sessionId, itemId: word, word: `${word} ${secret}` };
      for (const set of boundaryArguments(tool.parameters, target, i).filter((s) => !s.label.includes("item id"))) {
        const sent = new Set(leaves(set.args));
        for (const id of idsIn(await caller.call(owner, tool.name, set.args)) ?? []) if (!sent.has(id)) ids.add(id);
      }
    }
  }
  await ctx.harness.settle(owner);
  const readable: typeof words = [];
  for (const w of words) if ((await ctx.harness.readBack(owner, w.secret, { userId: OWNER })).found) readable.push(w);
  const items = ids.size > 0 ? [...ids].map((id, k) => ({ id, ...words[k % words.length]! })) : readable.map((w) => ({ id: "", ...w }));
  return { items: readable.length > 0 ? items : [], through: "tools", readBack: readable.map((w) => w.secret) };
}

/** Ids an answer names (values under id-like keys); `null` when it is not JSON. */
function idsIn(answer: string): Set<string> | null {
  let value: unknown;
  try {
    value = JSON.parse(answer);
  } catch {
    return null;
  }
  const out = new Set<string>();
  const visit = (v: unknown, key: string): void => {
    if ((typeof v === "string" || typeof v === "number") && parameterRole(key) === "id") out.add(String(v));
    else if (Array.isArray(v)) for (const e of v) visit(e, key);
    else if (v !== null && typeof v === "object") for (const [k, e] of Object.entries(v)) visit(e, k);
  };
  visit(value, "");
  return out;
}

/** Calls tools for the clause, and stops calling once calls hang (each would cost the call timeout). */
class ToolCaller {
  private hung = 0;

  /** A tool call's answer as text: a non-string answer is serialised, a throw becomes its message (never a failure here). */
  async call(instance: ProviderInstance, name: string, args: Record<string, unknown>): Promise<string> {
    if (this.hung >= MAX_TIMEOUTS) throw new Error(`tool calls stopped: ${this.hung} did not settle within the call timeout`);
    try {
      const answer: unknown = await instance.call(`handleToolCall(${name})`, (p) =>
        p.handleToolCall(name, args, { sessionId: instance.sessionId }),
      );
      return typeof answer === "string" ? answer : String(JSON.stringify(answer));
    } catch (error) {
      if (error instanceof ProviderCallTimeoutError) this.hung++;
      return `threw: ${describeError(error)}`;
    }
  }
}

/** The intruder drives every tool at every owner item; returns the problems and how many calls it made. */
async function intrude(
  intruder: ProviderInstance,
  tools: readonly Tool[],
  stored: Stored,
  ownerSession: string,
  caller: ToolCaller,
): Promise<{ problems: string[]; calls: number }> {
  const problems: string[] = [];
  const everything = stored.ghost ? [...stored.items, stored.ghost] : stored.items;
  let calls = 0;
  const target = (item: OwnerItem): BoundaryTarget => ({
    userId: OWNER,
    sessionId: ownerSession,
    itemId: item.id || item.word,
    word: item.word,
  });
  for (const tool of tools) {
    for (const [i, item] of stored.items.entries()) {
      const twins = stored.ghost ? boundaryArguments(tool.parameters, target(stored.ghost), i) : [];
      for (const set of boundaryArguments(tool.parameters, target(item), i)) {
        const shown = `${tool.name}(${JSON.stringify(set.args).slice(0, 160)})`;
        const answer = await caller.call(intruder, tool.name, set.args);
        calls++;
        for (const leak of leaksIn(answer, set.args, everything)) problems.push(`${shown} in ${INTRUDER}'s session answered with ${leak}`);
        const twin = twins.find((t) => t.label === set.label);
        if (!set.namesItem || !twin || !stored.ghost) continue;
        // The same call for an id no item has any more, twice: a tool whose answer varies by itself is not compared.
        const unused = normalised(await caller.call(intruder, tool.name, twin.args), stored.ghost);
        const again = normalised(await caller.call(intruder, tool.name, twin.args), stored.ghost);
        calls += 2;
        if (again === unused && normalised(answer, item) !== unused) {
          problems.push(
            `${shown} in ${INTRUDER}'s session answered ${JSON.stringify(answer.slice(0, 160))}, but for an id that does not exist ${JSON.stringify(unused.slice(0, 160))} (another user's id must be answered like an unknown one)`,
          );
        }
      }
    }
  }
  return { problems, calls };
}

/** What became of the owner's items, read as the owner after the intruder's calls. */
async function survivors(owner: ProviderInstance, ctx: ContractContext, stored: Stored): Promise<string[]> {
  await ctx.harness.settle(owner);
  const problems: string[] = [];
  if (stored.through === "api") {
    const memory = searchableOf(owner);
    for (const item of stored.items) {
      const now = snapshot(await owner.call("get()", () => memory.get(item.id)));
      if (now === undefined) problems.push(`the owner's item ${item.id} is gone after ${INTRUDER}'s tool calls`);
      else if (now !== item.before)
        problems.push(`the owner's item ${item.id} changed after ${INTRUDER}'s tool calls (${item.before} → ${now})`);
    }
  } else {
    for (const secret of stored.readBack ?? []) {
      if (!(await ctx.harness.readBack(owner, secret, { userId: OWNER })).found)
        problems.push(`an item the owner stored (marker ${secret}) is gone after ${INTRUDER}'s tool calls`);
    }
  }
  return problems;
}

function verdict(problems: readonly string[], note: string): ClauseOutcome {
  if (problems.length === 0) return pass(note);
  const more = problems.length > MAX_LISTED ? `; and ${problems.length - MAX_LISTED} more` : "";
  return fail(`${problems.slice(0, MAX_LISTED).join("; ")}${more}`);
}

/**
 * C-ISOLATION-4: two users' sessions on one profile. The owner stores items carrying marker words;
 * the intruder drives every declared tool at them (arguments generated from each schema); no
 * answer may show the owner's text or ids, an owner's id must be answered like an unknown one,
 * and the owner's items must be there, unchanged, afterwards.
 */
export async function runUserBoundaryClause(ctx: ContractContext): Promise<void> {
  await ctx.clause("C-ISOLATION-4", async () => {
    const caller = new ToolCaller();
    const hermesHome = ctx.sandbox.newHermesHome("user-boundary");
    const openAs = (label: string, userId: string): Promise<ProviderInstance> =>
      ctx.harness.openInstance(label, { hermesHome, context: { userId } });
    const owner = await openAs("boundary-owner", OWNER);
    let stored: Stored;
    let tools: Tool[];
    try {
      tools = toolsOf(await owner.call("getToolSchemas()", (p) => p.getToolSchemas()));
      if (tools.length === 0) return skip("the provider declares no named tools");
      stored = ctx.setup.capabilities.search ? await storeThroughApi(owner, ctx) : await storeThroughTools(owner, ctx, tools, caller);
    } finally {
      await owner.close();
    }
    if (stored.items.length === 0)
      return skip("the owner's tool calls stored nothing the kit could find again (declare capabilities.search or recall)");
    const unread = stored.through === "api" ? stored.items.filter((i) => i.before === undefined) : [];
    if (unread.length > 0)
      return fail(
        `get() does not return the owner's items ${unread.map((i) => i.id).join(", ")} right after remember() and flush(), so nothing can be compared`,
      );
    const intruder = await openAs("boundary-intruder", INTRUDER);
    let outcome: { problems: string[]; calls: number };
    try {
      outcome = await intrude(intruder, tools, stored, owner.sessionId, caller);
    } finally {
      await intruder.close();
    }
    const again = await openAs("boundary-owner-again", OWNER);
    try {
      outcome.problems.push(...(await survivors(again, ctx, stored)));
    } finally {
      await again.close();
    }
    const compared = stored.ghost
      ? ""
      : "; answers for the owner's ids were not compared with an unknown id's (no forgotten id to compare with)";
    return verdict(
      outcome.problems,
      `${outcome.calls} tool call(s) in ${INTRUDER}'s session at ${stored.items.length} item(s) of ${OWNER}${compared}`,
    );
  });
}
