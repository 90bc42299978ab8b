/** The clause groups, in the order the kit runs and reports them. */
export const CONTRACT_GROUPS = [
  "MANIFEST",
  "IDENTITY",
  "INIT",
  "TOOLS",
  "CONFIG",
  "HOOKS",
  "RECALL",
  "ISOLATION",
  "FILTERS",
  "EXPIRY",
  "ERASURE",
  "UPDATE",
  "CHECKPOINT",
  "LIFECYCLE",
] as const;

/** One clause group, e.g. `TOOLS`. */
export type ContractGroup = (typeof CONTRACT_GROUPS)[number];

/** A capability flag of `ContractCapabilities` that a clause needs, or the package dir. */
export type ClauseRequirement =
  "packageDir" | "tools" | "recall" | "checkpoint" | "search" | "sessionSwitch" | "mirrorsBuiltinWrites" | "userScoping" | "readBack";

/**
 * A `SearchableMemory` v2 capability a clause needs. The provider declares these itself in
 * `capabilities()` (read with core's `searchCapabilities`), so they are checked when the clause
 * runs, not from the setup.
 */
export type DeclaredCapability = "filters" | "expiry" | "erasure" | "update";

/** The static description of a clause: its stable id, title and troubleshooting hint. */
export interface ContractClause {
  /** Stable id such as `C-TOOLS-2`; never reused for a different obligation. */
  id: string;
  group: ContractGroup;
  title: string;
  /** One line telling the author what usually causes a failure and how to fix it. */
  hint: string;
  /** Capabilities that must be declared for the clause to run; otherwise it is skipped. */
  requires?: ClauseRequirement[];
  /**
   * Capabilities the provider must declare in `capabilities()` for the clause to run; checked at
   * run time on a fresh instance, and the clause is skipped with the reason when one is missing.
   */
  declares?: DeclaredCapability[];
  /**
   * The clause watches the whole run (what importing and running the provider did to the process
   * around it): it runs under every `only` selection and cannot be skipped by `setup.skip`, which
   * a package under test could otherwise use to hide what it did.
   */
  wholeRun?: boolean;
}

function clause(
  id: string,
  group: ContractGroup,
  title: string,
  hint: string,
  requires?: ClauseRequirement[],
  declares?: DeclaredCapability[],
): ContractClause {
  const out: ContractClause = requires ? { id, group, title, hint, requires } : { id, group, title, hint };
  if (declares) out.declares = declares;
  return out;
}

function wholeRun(c: ContractClause): ContractClause {
  c.wholeRun = true;
  return c;
}

/**
 * Every clause of the contract, in run order. The list is part of the public API: ids are stable,
 * new clauses get new ids.
 */
export const CONTRACT_CLAUSES: readonly ContractClause[] = [
  clause(
    "C-MANIFEST-1",
    "MANIFEST",
    "package.json declares a valid hermesMemoryProvider manifest",
    'Add "hermesMemoryProvider": "<name>" or {"name", "entry"} to package.json; the name must match ^[a-z0-9][a-z0-9._-]{0,63}$ and not be "builtin".',
    ["packageDir"],
  ),
  clause(
    "C-MANIFEST-2",
    "MANIFEST",
    "core's discovery resolves the manifest entry to a file inside the package",
    'Point "entry" (or "exports"/"main") at a built file inside the package, e.g. "./dist/index.js", and make sure it is listed in "files".',
    ["packageDir"],
  ),
  clause(
    "C-MANIFEST-3",
    "MANIFEST",
    "core's loader loads the provider from the entry and its name equals the manifest name",
    "Export register(ctx) that calls ctx.registerMemoryProvider(new YourProvider()) once; keep provider.name identical to the manifest name.",
    ["packageDir"],
  ),
  clause(
    "C-MANIFEST-4",
    "MANIFEST",
    "discovery lists the provider from its manifest without importing it",
    "Discovery reads package.json only: the manifest must carry the provider name, and the package must be a direct dependency of the host.",
    ["packageDir"],
  ),

  clause(
    "C-IDENTITY-1",
    "IDENTITY",
    "name matches ^[a-z0-9][a-z0-9._-]{0,63}$, is not reserved and equals setup.name",
    'Use a lowercase constant name (e.g. readonly name = "my-provider"); "builtin" is reserved.',
  ),
  clause(
    "C-IDENTITY-2",
    "IDENTITY",
    "isAvailable() is synchronous, quick (under 1 s) and returns a boolean",
    "isAvailable() must not be async or slow: check config, environment variables and installed dependencies only (no blocking I/O or heavy work), and return true/false.",
  ),
  clause(
    "C-IDENTITY-3",
    "IDENTITY",
    "isAvailable(), getToolSchemas() and getConfigSchema() make no network calls",
    "Move connectivity checks into initialize() or the first real call; these methods run at start-up and in status screens, often offline.",
  ),

  clause(
    "C-INIT-1",
    "INIT",
    "initialize() accepts unknown context keys and missing optional keys",
    "Read only the ctx keys you need, with defaults (ctx.platform ?? 'cli'); never validate ctx strictly or require optional keys.",
  ),
  clause(
    "C-INIT-2",
    "INIT",
    "initialize() and a normal session write only under hermesHome",
    "Derive every storage path from ctx.hermesHome (or getHermesHome()); never write to os.homedir(), process.cwd() or ~/.hermes.",
  ),

  clause(
    "C-TOOLS-1",
    "TOOLS",
    "tool schemas are valid OpenAI function tools (name ^[a-zA-Z0-9_-]{1,64}$, description, type: object parameters)",
    'Return bare {name, description, parameters: {type: "object", properties: {...}}}; names may only use letters, digits, _ and -.',
    ["tools"],
  ),
  clause(
    "C-TOOLS-2",
    "TOOLS",
    "unknown tool returns an error string",
    "In handleToolCall, return JSON.stringify({error: `unknown tool ${name}`}) for names you do not own instead of throwing.",
    ["tools"],
  ),
  clause(
    "C-TOOLS-3",
    "TOOLS",
    "tool parameters compile as JSON Schema (Ajv)",
    "Fix the parameters schema: use valid JSON Schema keywords and types (type, properties, required, items, enum).",
    ["tools"],
  ),
  clause(
    "C-TOOLS-4",
    "TOOLS",
    "tool names are unique and do not shadow reserved core tools",
    "Prefix tool names with your provider name (e.g. myprovider_search); core tools such as memory and terminal always win.",
    ["tools"],
  ),
  clause(
    "C-TOOLS-5",
    "TOOLS",
    "handleToolCall returns a string for every advertised tool",
    "Return a JSON string from every branch of handleToolCall (JSON.stringify the result object), also for empty results.",
    ["tools"],
  ),
  clause(
    "C-TOOLS-6",
    "TOOLS",
    "invalid arguments return an error string and never throw",
    "Validate args (required keys, types) and return JSON.stringify({error: ...}); the model sends malformed arguments regularly.",
    ["tools"],
  ),

  clause(
    "C-CONFIG-1",
    "CONFIG",
    "config fields have valid shapes",
    "Each field needs a unique non-empty string key; description/url/envVar are strings, type is text|integer|number|boolean, choices is an array.",
  ),
  clause(
    "C-CONFIG-2",
    "CONFIG",
    "secret fields declare envVar",
    'Give every secret field envVar: "MY_PROVIDER_API_KEY" (A-Z, 0-9, _); a secret without envVar is silently dropped by setup.',
  ),
  clause("C-CONFIG-3", "CONFIG", "choices contain the default", "Make default one of choices (or drop the default)."),
  clause(
    "C-CONFIG-4",
    "CONFIG",
    "saveConfig writes only under hermesHome and never writes a secret value",
    "Write non-secret values to a file under the hermesHome argument; secrets belong in $HERMES_HOME/.env, handled by setup.",
  ),

  clause(
    "C-HOOKS-1",
    "HOOKS",
    "syncTurn returns within the limit even when called 200 times in a burst",
    "Queue the write in memory and return; persist in the background (batched), and await the queue in flush()/shutdown().",
  ),
  clause(
    "C-HOOKS-2",
    "HOOKS",
    "every synced turn is persisted after flush/shutdown",
    "Drain the write queue in shutdown() (and flush()); do not drop queued turns when the queue is busy.",
    ["readBack"],
  ),
  clause(
    "C-HOOKS-3",
    "HOOKS",
    "old-style syncTurn calls without messages work",
    "Treat options.messages as optional: syncTurn(user, assistant, {sessionId}) must still persist the turn.",
    ["readBack"],
  ),
  clause(
    "C-HOOKS-4",
    "HOOKS",
    "agentContext 'subagent' writes nothing",
    "Check allowsAutomaticWrites(ctx) in initialize() and skip syncTurn/onSessionEnd writes for subagent, cron and flush contexts.",
    ["readBack"],
  ),
  clause(
    "C-HOOKS-5",
    "HOOKS",
    "onSessionSwitch succeeds and later turns are persisted",
    "Handle onSessionSwitch(newId, {reset}) by switching the session id (flush buffers on reset); never return false on success.",
    ["sessionSwitch", "readBack"],
  ),
  clause(
    "C-HOOKS-6",
    "HOOKS",
    "mirrored built-in memory writes (onMemoryWrite) are stored",
    "Store onMemoryWrite('add', target, content) as a fact so built-in memory is searchable in your backend.",
    ["mirrorsBuiltinWrites", "readBack"],
  ),
  clause(
    "C-HOOKS-7",
    "HOOKS",
    "turns synced before onSessionEnd are durable without shutdown",
    "Await your write queue in onSessionEnd() (e.g. await this.flush()): the host may exit right after the session boundary without a clean shutdown().",
    ["readBack"],
  ),
  clause(
    "C-HOOKS-8",
    "HOOKS",
    "turns synced before onSessionSwitch are durable without shutdown",
    "Await your write queue in onSessionSwitch() before switching (e.g. await this.flush()), and drop cached recall there.",
    ["sessionSwitch", "readBack"],
  ),
  clause(
    "C-HOOKS-9",
    "HOOKS",
    "a turn is stored as '<turnAuthor.name or User>: …' and 'Assistant: …' lines",
    "Label the user's line with options.turnAuthor.name (trimmed), else 'User', and the reply with 'Assistant' (turnText() in @hermes/memory-provider-kit).",
    ["search"],
  ),

  clause(
    "C-RECALL-1",
    "RECALL",
    "a fact synced in one session is recalled by prefetch in a new instance after restart",
    "Persist turns durably (drain in shutdown) and let prefetch(query) search all sessions of the profile, not just the current one.",
    ["recall"],
  ),
  clause(
    "C-RECALL-2",
    "RECALL",
    "prefetch is never served a result queuePrefetch computed for another session",
    "Key the queuePrefetch cache by session id and query text (PrefetchCache in @hermes/memory-provider-kit), never by query text alone.",
    ["recall"],
  ),

  clause(
    "C-RECALL-3",
    "RECALL",
    "an item remembered right after a search that found nothing is found by the next search for the same word",
    "Never cache an empty result or a document count of 0 across writes (DocumentFrequencies in @hermes/memory-provider-kit/sqlite does not); invalidate search caches on remember().",
    ["search"],
  ),
  clause(
    "C-RECALL-4",
    "RECALL",
    "remember() refuses a malformed item (no text content, an unknown kind, metadata JSON cannot hold) with INVALID_ARGUMENT, and the items remembered around it are stored",
    "Check each item with parseMemoryItem (@hermes/memory-provider-kit) before queueing it: an item that cannot be stored must be refused at the call, never accepted into a write queue where it fails, and holds up, the writes queued with it.",
    ["search"],
  ),
  clause(
    "C-RECALL-5",
    "RECALL",
    "search refuses a limit that is not a number of at least 1 with INVALID_ARGUMENT, and returns at most 10 hits when no limit is given",
    "Read the limit with parseSearchLimit (@hermes/memory-provider-kit): undefined or null means 10, a number of at least 1 is rounded down and capped; 0, negative numbers, NaN and text are refused, never replaced by the default.",
    ["search"],
  ),

  clause(
    "C-ISOLATION-1",
    "ISOLATION",
    "two profiles used concurrently never see each other's data",
    "Keep all state per instance and derived from ctx.hermesHome; no module-level caches or singletons keyed by nothing.",
    ["readBack"],
  ),
  clause(
    "C-ISOLATION-2",
    "ISOLATION",
    "userId scoping keeps users of one profile apart",
    "Store ctx.userId with every item and filter prefetch/search by it.",
    ["userScoping", "readBack"],
  ),
  clause(
    "C-ISOLATION-3",
    "ISOLATION",
    "one instance serving two users: search(q, {userId}) returns only that user's items, and forgetWhere({userId}) leaves the other user's",
    "Filter by the userId the caller passes in search options and in remember(item.userId), not by the instance's own ctx.userId; with erasure, scope forgetWhere by it too.",
    ["search"],
  ),
  clause(
    "C-ISOLATION-4",
    "ISOLATION",
    "in a session opened for one user, no tool shows, changes or deletes another user's items, and another user's id is answered like an unknown id",
    "Scope every tool by ctx.userId in the same query as its other conditions (ToolUserScope in @hermes/memory-provider-kit): filter search and list by the session's user, look an id up together with the user (never by id first and the user after), answer another user's id exactly like one that does not exist, and store what a tool remembers under the session's user.",
    ["tools", "userScoping"],
  ),

  clause(
    "C-FILTERS-1",
    "FILTERS",
    "search honours every MemoryFilter key: kind lists, sessionId, userId, tags any/all, createdAt ranges and metadata operators",
    "Evaluate every key of the search options as a condition that must hold (parseMemoryFilter + matchesMemoryFilter or filterToSql in @hermes/memory-provider-kit); values compare by type and a list field matches $eq/$in by any element.",
    ["search"],
    ["filters"],
  ),
  clause(
    "C-FILTERS-2",
    "FILTERS",
    "a filtered search returns the best limit matches among the passing items, even when the best unfiltered matches all fail the filter",
    "Apply the filter before taking the top limit (in the query, or by widening the candidate set until limit passing items are found); never filter an unfiltered top-k.",
    ["search"],
    ["filters"],
  ),
  clause(
    "C-FILTERS-3",
    "FILTERS",
    "a malformed filter is refused with a HermesMemoryError of code INVALID_ARGUMENT",
    "Validate search options with parseMemoryFilter (@hermes/memory-provider-kit) before touching the store; unknown keys, operators and wrongly typed values must throw INVALID_ARGUMENT, never widen the search.",
    ["search"],
    ["filters"],
  ),

  clause(
    "C-EXPIRY-1",
    "EXPIRY",
    "an item with a short ttlMs is returned by search and get before it expires and never after; purgeExpired() deletes and counts it",
    "Store the expiry (resolveExpiry in @hermes/memory-provider-kit) and exclude expired items in search, get and recall at read time; purgeExpired() deletes them and returns how many.",
    ["search"],
    ["expiry"],
  ),

  clause(
    "C-ERASURE-1",
    "ERASURE",
    "forgetWhere by ids, userId, sessionId and filter returns the count erased; the erased text is found by neither search nor get; other items stay",
    "Delete the matching items from every copy you keep (rows, full-text and vector indexes, caches) before resolving, and return how many items were erased.",
    ["search"],
    ["erasure"],
  ),
  clause(
    "C-ERASURE-2",
    "ERASURE",
    "forgetWhere with an empty scope is refused with INVALID_ARGUMENT and erases nothing",
    'Parse the scope with parseForgetScope(scope) (@hermes/memory-provider-kit): it refuses an empty scope, which must never mean "erase everything" unless confirmAll is true.',
    ["search"],
    ["erasure"],
  ),
  clause(
    "C-ERASURE-3",
    "ERASURE",
    "forgetWhere refuses a scope that would erase every item of the store with INVALID_ARGUMENT and erases nothing, unless confirmAll: true; a scope with ids needs no confirmation",
    "Count the items the erasure would remove (copies included) and the items of the store in the transaction or snapshot the erasure runs in, and call checkWholeStoreErasure(parsedScope, erasing, total) (@hermes/memory-provider-kit) before deleting anything (or roll back when it throws).",
    ["search"],
    ["erasure"],
  ),

  clause(
    "C-UPDATE-1",
    "UPDATE",
    "update(id, changes) re-indexes the item: the old text is no longer found, the new text is, tags and metadata are replaced; an unknown id gives false",
    "Rewrite the item in every index (full-text, vectors, caches) in update(), replacing tags and metadata wholesale when given; return false for an id that does not exist.",
    ["search"],
    ["update"],
  ),

  clause(
    "C-CHECKPOINT-1",
    "CHECKPOINT",
    "declares preCompressCheckpointApiVersion 2 and onPreCompress returns a string",
    "Set readonly preCompressCheckpointApiVersion = 2 and return a (possibly empty) string after the checkpoint is durable.",
    ["checkpoint"],
  ),
  clause(
    "C-CHECKPOINT-2",
    "CHECKPOINT",
    "the same evidence checkpointed twice is stored once",
    "Key checkpoint rows by a content digest (e.g. sha256 of role + text) and upsert, so retries deduplicate.",
    ["checkpoint", "search"],
  ),
  clause(
    "C-CHECKPOINT-3",
    "CHECKPOINT",
    "overlapping evidence only adds the new part",
    "Digest each message, not the whole transcript: a retry with a longer transcript must only add the new messages.",
    ["checkpoint", "search"],
  ),
  clause(
    "C-CHECKPOINT-4",
    "CHECKPOINT",
    "a storage failure makes onPreCompress throw under requireCheckpoint",
    "Never swallow write errors in onPreCompress: await the durable write and let failures propagate (throw).",
    ["checkpoint"],
  ),
  clause(
    "C-CHECKPOINT-5",
    "CHECKPOINT",
    "archived checkpoint messages are stored as 'User: …' / 'Assistant: …'",
    "Store each archived message with its role label, like turns (checkpointText() in @hermes/memory-provider-kit).",
    ["checkpoint", "search"],
  ),

  clause(
    "C-LIFECYCLE-1",
    "LIFECYCLE",
    "shutdown() is idempotent",
    "Guard shutdown() with a closed flag; a second call must resolve without closing handles twice.",
  ),
  clause(
    "C-LIFECYCLE-2",
    "LIFECYCLE",
    "calls after shutdown do not throw",
    "After shutdown, make hooks no-ops (return '' / undefined) instead of touching closed handles.",
  ),
  clause(
    "C-LIFECYCLE-3",
    "LIFECYCLE",
    "after shutdown no handles keep the process alive",
    "Clear intervals/timeouts, close sockets, servers and file handles in shutdown(); unref() timers that may outlive it.",
  ),
  wholeRun(
    clause(
      "C-LIFECYCLE-4",
      "LIFECYCLE",
      "importing and running the provider leaves the standard prototypes and globals unchanged",
      "Never add, replace or remove properties of Object.prototype, Array.prototype, String.prototype, JSON, console and other built-ins (no polyfills or monkey-patches at import); use your own helpers or a module-local wrapper instead.",
    ),
  ),
  wholeRun(
    clause(
      "C-LIFECYCLE-5",
      "LIFECYCLE",
      "no child process the provider started is still running after shutdown",
      "Keep a handle on every process you spawn and stop it in shutdown() (kill it and await its exit); do not detach or unref helpers you never stop.",
    ),
  ),
];

/** The clause with this id; throws for an unknown id (a bug in the caller). */
export function getClause(id: string): ContractClause {
  const found = CONTRACT_CLAUSES.find((c) => c.id === id);
  if (!found) throw new Error(`Unknown contract clause ${id}`);
  return found;
}
