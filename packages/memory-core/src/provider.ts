import { UnsupportedToolError } from "./errors.js";

/** A value or a promise of it: every provider hook may be synchronous or asynchronous. */
export type MaybePromise<T> = T | Promise<T>;

/** A JSON Schema object (draft 2020-12 / OpenAI function `parameters`). */
export type JsonSchema = Record<string, unknown>;

/** Provider names: `^[a-z0-9][a-z0-9._-]{0,63}$`; `builtin` is reserved for the built-in memory. */
export const PROVIDER_NAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;

/** The name of the built-in MEMORY.md / USER.md provider. No external provider may use it. */
export const BUILTIN_PROVIDER_NAME = "builtin";

/** True when `name` is a valid external provider name. */
export function isValidProviderName(name: unknown): name is string {
  return typeof name === "string" && PROVIDER_NAME_PATTERN.test(name) && name !== BUILTIN_PROVIDER_NAME;
}

/**
 * A tool a provider offers the model, in the bare (unwrapped) OpenAI function form. The manager
 * also accepts the wrapped `{type: "function", function: {...}}` form and unwraps it.
 */
export interface ToolSchema {
  name: string;
  description: string;
  parameters: JsonSchema;
}

/** One part of a multimodal message content array (OpenAI style). */
export interface ContentPart {
  type: string;
  text?: string;
  [key: string]: unknown;
}

/** An OpenAI-style chat message as the host keeps it. Unknown keys are preserved. */
export interface ChatMessage {
  role: "system" | "user" | "assistant" | "tool" | (string & {});
  content?: string | ContentPart[] | null;
  tool_calls?: unknown[];
  tool_call_id?: string;
  name?: string;
  /** Persistent marker on prior compaction summaries; such rows are never checkpoint evidence. */
  _compressed_summary?: boolean;
  [key: string]: unknown;
}

/** Where the agent runs: providers skip automatic writes unless it is `primary` (or absent). */
export type AgentContext = "primary" | "cron" | "subagent" | "flush";

/**
 * Context handed to `initialize()`. `hermesHome` is always set (the active profile's storage
 * directory); every other key is optional, and providers must tolerate keys they do not know.
 */
export interface InitContext {
  /** Active profile's storage directory. All provider storage lives under it. */
  hermesHome: string;
  /** Session surface such as `cli`, `gui`, `acp`, `telegram`, `cron`. Defaults to `cli`. */
  platform?: string;
  sessionTitle?: string;
  sessionTitleSource?: "derived" | "llm" | "user";
  /** Logical workspace of the conversation (not necessarily `process.cwd()`). */
  cwd?: string;
  gatewaySessionKey?: string;
  userId?: string;
  userIdAlt?: string;
  userName?: string;
  chatId?: string;
  /** Active profile name. */
  agentIdentity?: string;
  agentWorkspace?: string;
  agentContext?: AgentContext;
  parentSessionId?: string;
  [key: string]: unknown;
}

/** True when a provider should perform automatic writes for this context (primary or absent). */
export function allowsAutomaticWrites(ctx: Pick<InitContext, "agentContext"> | undefined): boolean {
  const value = ctx?.agentContext;
  return value === undefined || value === null || value === "primary";
}

/**
 * One setting of a provider, declared once: it drives both the setup form
 * (`hermes-memory memory setup`, `planSetup`/`applySetup`) and the typed runtime config
 * (`resolveProviderConfig`), with the same defaults, types, bounds and choices.
 *
 * Keys are camelCase. A schema ported from the original keeps working: `env_var` is read as
 * `envVar`, `default_from` as `defaultFrom`, and the dashboard-only `step` is accepted and
 * unused. Any other key (e.g. `env_key`), or both spellings with different values, is refused
 * with `INVALID_PROVIDER` naming the field and the key, by setup, `memory status` and
 * `resolveProviderConfig` alike, so a secret is never stored under a variable the provider
 * does not read.
 */
export interface ConfigField {
  /**
   * Config key in snake_case, e.g. `api_key` or `path` (`memory.<name>.<key>` in config.yaml).
   * The resolved runtime config and explicit options use its camelCase twin (`apiKey`).
   */
  key: string;
  /** Prompt label; defaults to `key`. */
  description?: string;
  /** Secret values go to `$HERMES_HOME/.env` under `envVar`, never to a config file. */
  secret?: boolean;
  /** Setup refuses to finish until a required field has a value. */
  required?: boolean;
  /** Environment variable holding the value (mandatory for secrets; see `applySetup`). */
  envVar?: string;
  /** Where to get the credential, printed as `Get yours at <url>`. */
  url?: string;
  default?: string | number | boolean;
  /**
   * Allowed values, shown as a select; must contain `default` when both are given. Matching
   * accepts the printed form (`"5"` for `5`) and, for strings, any case; the value becomes the choice.
   */
  choices?: ReadonlyArray<string | number | boolean>;
  /**
   * How the value is read: `text` (a string), `integer`, `number`, `boolean`, or `url` (an
   * absolute `http://` or `https://` URL with a host, e.g. an API endpoint; anything else, such as
   * `file:` or a bare word, is refused when the config is resolved instead of at the first request).
   */
  type?: "text" | "integer" | "number" | "boolean" | "url";
  minimum?: number;
  maximum?: number;
  /**
   * Field shown only when every `config[k] === v`. At runtime (`resolveProviderConfig`) a field
   * whose `when` does not match is not required; its value or default is still resolved.
   */
  when?: Record<string, unknown>;
  /** Default taken from another (earlier) field's value: `map[config[field]]` when present. */
  defaultFrom?: { field: string; map: Record<string, string | number | boolean> };
  /**
   * An advanced tunable: setup does not ask for it (`planSetup` leaves it out unless an answer
   * names it, e.g. `--set batch_size=512`), but it is still read from config.yaml, env and
   * options, defaulted and validated by `resolveProviderConfig` like every other field. Declare
   * every setting the provider reads at runtime, advanced or not, so each default exists once.
   */
  advanced?: boolean;
  /** The original's spelling of `envVar`; give one of the two (both only when equal). */
  env_var?: string;
  /** The original's spelling of `defaultFrom`; give one of the two (both only when equal). */
  default_from?: { field: string; map: Record<string, string | number | boolean> };
  /** The original's dashboard step for numbers; accepted and unused. */
  step?: number;
}

/** What `recallStatus()` reports about the LAST prefetch. `count <= 0`: injected, no count. */
export interface RecallStatus {
  providerLabel: string;
  count: number;
  glyph?: string;
}

/** Default recall-indicator glyph. */
export const INDICATOR_GLYPH = "🧠";

/** Who wrote a turn (gateway hosts with several participants). */
export interface TurnAuthor {
  id?: string;
  name?: string;
  isBot?: boolean;
}

/** Second argument of `prefetch` / `queuePrefetch`: the session the recall is for. */
export interface PrefetchOptions {
  sessionId: string;
}

/** Third argument of `syncTurn`: the session and, when the host has them, the turn's messages and author. */
export interface SyncTurnOptions {
  sessionId: string;
  /** OpenAI-style context of the completed turn, incl. tool calls and tool results. */
  messages?: ChatMessage[];
  turnAuthor?: TurnAuthor;
}

/** Third argument of `onTurnStart`: what the host knows about the turn; every key is optional and unknown keys may appear. */
export interface TurnStartOptions {
  remainingTokens?: number;
  model?: string;
  platform?: string;
  toolCount?: number;
  authorId?: string | null;
  authorName?: string | null;
  authorIsBot?: boolean;
  [key: string]: unknown;
}

/** Second argument of `onSessionSwitch`: where the new session came from and whether it is a fresh conversation. */
export interface SessionSwitchOptions {
  parentSessionId: string;
  /** True only for a genuinely new conversation: flush buffers. */
  reset: boolean;
  /** True for `/undo`: same session id, history rewound. */
  rewound: boolean;
  /** e.g. `resume`, `new_session`, `branch`, `compression`. */
  reason?: string;
  [key: string]: unknown;
}

/** Second argument of `onPreCompress`. */
export interface PreCompressOptions {
  /** True when `compression.checkpoint_required` is on: a throw blocks the lossy rewrite. */
  requireCheckpoint: boolean;
}

/** What a mirrored built-in memory write did (`onMemoryWrite`). */
export type MemoryWriteAction = "add" | "replace" | "remove";
/** Which built-in file a mirrored write changed: `memory` (MEMORY.md) or `user` (USER.md). */
export type MemoryWriteTarget = "memory" | "user";

/** Metadata of a mirrored built-in memory write. Unknown keys may appear. */
export interface MemoryWriteMetadata {
  writeOrigin?: string;
  executionContext?: string;
  sessionId?: string;
  parentSessionId?: string;
  platform?: string;
  toolName?: string;
  /** The search text the model used (not an identity). */
  oldText?: string;
  /** The exact entry text before a replace/remove, when the store reported it. */
  previousContent?: string;
  [key: string]: unknown;
}

/** Third argument of `onDelegation`: the finished subagent's session; unknown keys may appear. */
export interface DelegationOptions {
  childSessionId: string;
  [key: string]: unknown;
}

/** Third argument of `handleToolCall`: the calling session, when known; unknown keys may appear. */
export interface ToolCallOptions {
  sessionId?: string;
  [key: string]: unknown;
}

const PROVIDER_MARKER = Symbol.for("@hermes/memory.provider");
const DEFAULT_SAVE_CONFIG = Symbol.for("@hermes/memory.default-save-config");

/**
 * The contract every memory provider implements. Subclass it, implement the abstract members and
 * override the optional hooks you need; every optional hook has a no-op default.
 *
 * Rules that apply to every hook:
 * - Hooks may be synchronous or return a promise; the manager awaits them.
 * - Options are always passed as one object; read what you need and ignore the rest.
 * - Never store data outside `ctx.hermesHome` (profile isolation) unless the user configured it.
 * - Never block the caller on network or disk in `syncTurn`/`queuePrefetch`: queue and return.
 */
export abstract class MemoryProvider {
  /** Markers that survive duplicate installs of `@hermes/memory-core` (see `isMemoryProvider`). */
  static readonly [PROVIDER_MARKER] = true;
  readonly [PROVIDER_MARKER] = true;

  /**
   * Short identifier users select with `memory.provider`. Must match `PROVIDER_NAME_PATTERN`;
   * `builtin` is reserved. Must be constant for the life of the instance.
   */
  abstract readonly name: string;

  /**
   * Checkpoint contract version of `onPreCompress`. `1` (default): best effort, raw messages.
   * `2`: every successful return means a durable checkpoint was committed; throw on any failure;
   * receives normalised user/assistant evidence instead of raw messages.
   */
  readonly preCompressCheckpointApiVersion: 1 | 2 = 1;

  /**
   * Whether this provider can activate. Called at start-up, by discovery tooling and by
   * `hermes-memory memory status`. Must be synchronous and cheap: check config, environment and
   * installed dependencies only. Must NOT touch the network or open databases.
   */
  abstract isAvailable(): boolean;

  /**
   * Called once per agent start (through `MemoryManager.initializeAll`). `ctx.hermesHome` is
   * always set; use it for storage. Tolerate unknown and missing optional keys. May open files
   * and start background writers; must not assume `process.cwd()` is the user's workspace.
   */
  abstract initialize(sessionId: string, ctx: InitContext): MaybePromise<void>;

  /**
   * Inspection-only initialisation (status screens, tooling): load static state without network
   * calls or background work, and create nothing: when the provider's storage does not exist yet,
   * leave it absent and let `stats()` report no items (a fresh setup has nothing stored; that is
   * not an error). Defaults to `initialize`.
   */
  initializeForInspection(sessionId: string, ctx: InitContext): MaybePromise<void> {
    return this.initialize(sessionId, ctx);
  }

  /**
   * Tools this provider offers the model (`[]` for context-only providers). Read at registration,
   * before any state changes, and again when tools are injected; must be cheap and side-effect free.
   */
  abstract getToolSchemas(): ToolSchema[];

  /**
   * Handle a call to one of this provider's tools. Must return a JSON string, also for errors
   * (`{"error": "..."}`); the manager converts a throw into an error string. The default throws
   * `UnsupportedToolError`.
   */
  handleToolCall(toolName: string, _args: Record<string, unknown>, _options: ToolCallOptions = {}): MaybePromise<string> {
    throw new UnsupportedToolError(this.name, toolName);
  }

  /**
   * Fields `hermes-memory memory setup` asks for. Keep it minimal: only what a user must set.
   * Secret fields need `envVar`. Must not touch the network.
   */
  abstract getConfigSchema(): ConfigField[];

  /**
   * Persist non-secret setup answers in the provider's native location under `hermesHome`.
   * When a provider does not override this method, setup stores the values in `config.yaml`
   * under `memory.<name>` instead (see `overridesSaveConfig`). Never receives secrets.
   */
  saveConfig(_values: Record<string, unknown>, _hermesHome: string): MaybePromise<void> {
    // Not overridden: setup writes the values to config.yaml under memory.<name>.
  }

  /**
   * Optional: an interactive or follow-up step after `hermes-memory memory setup` saved the answers
   * (secrets in `.env`, values via `saveConfig` or config.yaml, `memory.provider` set) and before
   * the user is told to start a new session — an OAuth sign-in, a connection test, a first sync.
   * `values` are the saved non-secret values; read secrets with `getEnv()` (the new `.env` is
   * visible: it runs in the profile's scope). Bounded by a timeout (default 5 minutes); a throw or
   * a timeout is reported as `POST_SETUP_FAILED` (the saved settings stay).
   */
  postSetup?(hermesHome: string, values: Record<string, unknown>): MaybePromise<void>;

  /**
   * Optional: extra `key: value` lines `hermes-memory memory status` shows for this provider
   * (e.g. account, endpoint, index, last sync). Receives the provider's `memory.<name>` section
   * of config.yaml. Never return secrets. Must be cheap and must not touch the network. A throw is
   * shown as `status_config_error`.
   */
  getStatusConfig?(providerConfig: Record<string, unknown>): MaybePromise<Record<string, unknown>>;

  /**
   * Static text for the system prompt (instructions, tool names, status). Never recalled content:
   * recall goes through `prefetch`, so the prompt prefix stays cacheable.
   */
  systemPromptBlock(): MaybePromise<string> {
    return "";
  }

  /**
   * Recall for the upcoming model call. Called before each turn's API call (not for trivial
   * prompts). Should be fast: serve what `queuePrefetch` computed. The manager bounds external
   * providers with a timeout and spills oversized results to a file.
   */
  prefetch(_query: string, _options: PrefetchOptions): MaybePromise<string> {
    return "";
  }

  /** Pre-warm recall for the next turn. Called in the background after each turn. */
  queuePrefetch(_query: string, _options: PrefetchOptions): MaybePromise<void> {}

  /** Reflects only the LAST `prefetch` call; `null` when there is nothing to show. */
  recallStatus(): RecallStatus | null {
    return null;
  }

  /**
   * Persist a completed turn. Called from the manager's background queue; still, it MUST return
   * quickly (queue the write and return). Skip writes when `agentContext` is not `primary`.
   */
  syncTurn(_userContent: string, _assistantContent: string, _options: SyncTurnOptions): MaybePromise<void> {}

  /** Start of each turn, before prefetch. `turnNumber` is 1-based. */
  onTurnStart(_turnNumber: number, _message: string, _options: TurnStartOptions): MaybePromise<void> {}

  /** Real session boundary (exit, `/reset`, expiry) — never per turn. Receives the transcript. */
  onSessionEnd(_messages: ChatMessage[]): MaybePromise<void> {}

  /**
   * The session id rotated without teardown (`/resume`, `/branch`, `/new`, compression). Returning
   * `false` (or throwing) marks the switch as failed; the host may retry it.
   */
  onSessionSwitch(_newSessionId: string, _options: SessionSwitchOptions): MaybePromise<void | boolean> {}

  /**
   * Before context compression discards messages. Returns text for the summary prompt. With
   * checkpoint API v2 a successful return means the evidence is durably archived (idempotently:
   * retries re-send overlapping evidence); throw on any failure.
   */
  onPreCompress(_messages: ChatMessage[], _options: PreCompressOptions): MaybePromise<string> {
    return "";
  }

  /** After the built-in memory tool committed a write (mirrors to external providers only). */
  onMemoryWrite(
    _action: MemoryWriteAction,
    _target: MemoryWriteTarget,
    _content: string,
    _metadata: MemoryWriteMetadata,
  ): MaybePromise<void> {}

  /** On the parent when a subagent finished (the subagent runs with memory writes skipped). */
  onDelegation(_task: string, _result: string, _options: DelegationOptions): MaybePromise<void> {}

  /** Short user-facing hint why `isAvailable()` is false (e.g. which package to install). */
  unavailableReason(): string {
    return "";
  }

  /**
   * Absolute paths of provider state OUTSIDE `$HERMES_HOME` for backups. Callable without
   * `initialize`; no network.
   */
  backupPaths(): string[] {
    return [];
  }

  /** Process exit / manager shutdown: flush queues, close connections. Must be idempotent. */
  shutdown(): MaybePromise<void> {}
}

/** True for any MemoryProvider instance, including one built against another copy of core. */
export function isMemoryProvider(value: unknown): value is MemoryProvider {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[PROVIDER_MARKER] === true;
}

/** True for a class (constructor) extending `MemoryProvider`, from this copy of core or another. */
export function isMemoryProviderClass(value: unknown): value is new () => MemoryProvider {
  // Static members are inherited through the constructor chain, so subclasses see the marker.
  return typeof value === "function" && (value as unknown as Record<symbol, unknown>)[PROVIDER_MARKER] === true;
}

/** True when the provider overrides `saveConfig` (else setup writes `memory.<name>` in config.yaml). */
export function overridesSaveConfig(provider: MemoryProvider): boolean {
  const method = (provider as unknown as { saveConfig?: unknown }).saveConfig;
  return typeof method === "function" && (method as unknown as Record<symbol, unknown>)[DEFAULT_SAVE_CONFIG] !== true;
}

// The base saveConfig is tagged so `overridesSaveConfig` works across duplicate installs.
(MemoryProvider.prototype.saveConfig as unknown as Record<symbol, unknown>)[DEFAULT_SAVE_CONFIG] = true;

// ---------------------------------------------------------------------------------------------
// Searchable memory: an optional capability for providers that can be queried directly.

/** The three kinds of stored items. */
export type MemoryKind = "turn" | "fact" | "checkpoint";

/** An item to remember. Turns remembered in order with the same `sessionId` form a conversation. */
export interface MemoryItem {
  content: string;
  kind?: MemoryKind;
  sessionId?: string;
  userId?: string;
  tags?: string[];
  metadata?: Record<string, unknown>;
  /**
   * When the item expires (ISO 8601 text, a `Date` or epoch milliseconds). An expired item is never
   * returned by search, prefetch or tools and is purged later. Needs the `expiry` capability.
   */
  expiresAt?: string | number | Date;
  /** Time to live in milliseconds from now; the alternative to `expiresAt` (give one, not both). */
  ttlMs?: number;
}

/** One search result. `id` is stable for the life of the item; hits are ordered by `score` desc. */
export interface MemoryHit {
  id: string;
  content: string;
  kind: MemoryKind;
  score: number;
  sessionId?: string;
  userId?: string;
  /** ISO 8601 creation time. */
  createdAt: string;
  metadata: Record<string, unknown>;
  /** The item's tags, when it has any (providers with the `filters` capability return them). */
  tags?: string[];
  /** ISO 8601 expiry time, when the item expires. */
  expiresAt?: string;
}

/** A metadata value a filter compares with: text, a finite number or a boolean. */
export type MetadataScalar = string | number | boolean;

/**
 * The operators of a metadata condition (the vocabulary of Pinecone's and MongoDB's filters).
 * Several operators in one object must all hold. On a field holding a list, `$eq` / `$in` match
 * when any element matches and `$ne` / `$nin` when none does; `$gt $gte $lt $lte` compare numbers
 * only and never match a list. An item without the field matches only `$ne`, `$nin` and
 * `$exists: false`.
 */
export interface MetadataOperators {
  $eq?: MetadataScalar;
  $ne?: MetadataScalar;
  $in?: MetadataScalar[];
  $nin?: MetadataScalar[];
  $gt?: number;
  $gte?: number;
  $lt?: number;
  $lte?: number;
  $exists?: boolean;
}

/**
 * A filter on an item's top-level `metadata` fields: `{ field: value }` (shorthand for `$eq`),
 * `{ field: { $op: value } }`, and `$and` / `$or` over lists of filters. Fields of one object are
 * ANDed. Field names may not start with `$`.
 */
export interface MetadataFilter {
  $and?: MetadataFilter[];
  $or?: MetadataFilter[];
  [field: string]: MetadataScalar | MetadataOperators | MetadataFilter[] | undefined;
}

/** A creation-time range; bounds are ISO 8601 text, a `Date` or epoch milliseconds. */
export interface TimeRange {
  $gt?: string | number | Date;
  $gte?: string | number | Date;
  $lt?: string | number | Date;
  $lte?: string | number | Date;
}

/**
 * Which items a search considers or an erasure removes. Every given condition must hold.
 * A filtered search returns the best `limit` matches among the items that pass the filter.
 */
export interface MemoryFilter {
  /** One kind or any of several. */
  kind?: MemoryKind | MemoryKind[];
  sessionId?: string;
  userId?: string;
  /** `any`: the item has at least one of these tags; `all`: it has every one. */
  tags?: { any?: string[]; all?: string[] };
  /** The item's creation time lies in this range. */
  createdAt?: TimeRange;
  /** Conditions on the item's metadata fields. */
  metadata?: MetadataFilter;
}

const MEMORY_KINDS_SCHEMA = { type: "string", enum: ["turn", "fact", "checkpoint"] } as const;

/**
 * JSON Schema of every `MemoryFilter` key, and of nothing else, for the `properties` of a tool's
 * parameters (a search or an erasure a model calls). It checks the shape; operators, values and
 * limits are checked where the filter is parsed. Times are ISO 8601 text here: a model writes JSON.
 */
export const MEMORY_FILTER_TOOL_PROPERTIES = {
  kind: {
    description: "Only items of this kind (turn, fact or checkpoint), or of any kind in a list.",
    anyOf: [MEMORY_KINDS_SCHEMA, { type: "array", items: MEMORY_KINDS_SCHEMA, minItems: 1 }],
  },
  sessionId: { type: "string", minLength: 1, description: "Only items of this conversation session." },
  userId: { type: "string", minLength: 1, description: "Only items of this user." },
  tags: {
    type: "object",
    description: 'Tag conditions: {"any": [...]} items with at least one of the tags, {"all": [...]} items with every one.',
    properties: {
      any: { type: "array", items: { type: "string", minLength: 1 }, minItems: 1 },
      all: { type: "array", items: { type: "string", minLength: 1 }, minItems: 1 },
    },
    additionalProperties: false,
  },
  createdAt: {
    type: "object",
    description: 'Creation-time range, ISO 8601 bounds, e.g. {"$gte": "2026-01-01T00:00:00Z", "$lt": "2026-02-01T00:00:00Z"}.',
    properties: { $gt: { type: "string" }, $gte: { type: "string" }, $lt: { type: "string" }, $lte: { type: "string" } },
    additionalProperties: false,
  },
  metadata: {
    type: "object",
    description:
      'Conditions on metadata fields: {"field": value} or {"field": {"$op": value}} with $eq $ne $in $nin $gt $gte $lt $lte $exists, combined with $and / $or lists.',
  },
} as const satisfies { readonly [K in keyof Required<MemoryFilter>]: JsonSchema };

/** Options of `SearchableMemory.search`: a filter (filters beyond `kind`, `sessionId` and `userId` need the `filters` capability) and a limit. */
export interface MemorySearchOptions extends MemoryFilter {
  limit?: number;
}

/**
 * What `SearchableMemory.forgetWhere` erases: the items with these ids and/or those passing the
 * filter. At least one condition is required, unless `confirmAll` is true.
 */
export interface ForgetScope extends MemoryFilter {
  ids?: string[];
  /**
   * Confirms that the scope may erase every item of the store. Without it, a scope that would
   * erase every item (a condition every item passes, such as `createdAt: { $gte: 0 }`) is refused
   * with `INVALID_ARGUMENT` saying how many items it matches, and nothing is erased; a scope with
   * `ids` never needs it (each item is named). `{ confirmAll: true }` alone erases every item.
   */
  confirmAll?: boolean;
}

/** The changes `SearchableMemory.update` applies; keys left out keep their value (`expiresAt: null` removes the expiry). */
export interface MemoryUpdate {
  content?: string;
  tags?: string[];
  metadata?: Record<string, unknown>;
  expiresAt?: string | number | Date | null;
}

/**
 * The optional parts of `SearchableMemory` a provider implements, as it declares them in
 * `capabilities()`. The contract kit runs the clauses of each declared capability and skips the
 * others, saying why.
 */
export interface SearchCapabilities {
  /** `search` honours every key of `MemoryFilter` (tags, time range, metadata, several kinds). */
  filters: boolean;
  /** `expiresAt` / `ttlMs` are honoured, and `purgeExpired` exists. */
  expiry: boolean;
  /** `forgetWhere` exists and reaches every copy of an item the provider keeps. */
  erasure: boolean;
  /** `update` exists and re-indexes the item. */
  update: boolean;
}

/** Store statistics. Providers may add their own keys. */
export interface MemoryStats {
  items: number;
  byKind: Record<MemoryKind, number>;
  sessions?: number;
  /** Where the data lives (file path, index name…). */
  location?: string;
  sizeBytes?: number;
  [key: string]: unknown;
}

/**
 * Direct query access, implemented by both reference providers and used by the CLI, the contract
 * kit and the benchmarks. Methods may be sync or async.
 */
export interface SearchableMemory {
  remember(item: MemoryItem): MaybePromise<string>;
  search(query: string, options?: MemorySearchOptions): MaybePromise<MemoryHit[]>;
  get(id: string): MaybePromise<MemoryHit | null>;
  forget(id: string): MaybePromise<boolean>;
  stats(): MaybePromise<MemoryStats>;
  /** Wait until everything queued so far is durably stored and searchable. */
  flush(): MaybePromise<void>;
  /** The optional capabilities this provider implements; absent means none. */
  capabilities?(): SearchCapabilities;
  /**
   * Erase every item in `scope` from every copy the provider keeps; resolves to how many items were
   * erased (`erasure`). Must refuse (`INVALID_ARGUMENT`, nothing erased) an empty scope, and a
   * scope without `ids` that would erase every item of the store unless `scope.confirmAll` is true.
   */
  forgetWhere?(scope: ForgetScope): MaybePromise<number>;
  /** Change a stored item and re-index it; false when no item has `id` (`update`). */
  update?(id: string, changes: MemoryUpdate): MaybePromise<boolean>;
  /** Delete the items that have expired; resolves to how many were deleted (`expiry`). */
  purgeExpired?(): MaybePromise<number>;
}

/** The capabilities `provider` declares, every flag present (false when not declared). */
export function searchCapabilities(provider: SearchableMemory): SearchCapabilities {
  const declared = typeof provider.capabilities === "function" ? provider.capabilities() : undefined;
  return {
    filters: declared?.filters === true,
    expiry: declared?.expiry === true && typeof provider.purgeExpired === "function",
    erasure: declared?.erasure === true && typeof provider.forgetWhere === "function",
    update: declared?.update === true && typeof provider.update === "function",
  };
}

/** Type guard for `SearchableMemory`. */
export function isSearchableMemory<T>(provider: T): provider is T & SearchableMemory {
  if (typeof provider !== "object" || provider === null) return false;
  const p = provider as Record<string, unknown>;
  return ["remember", "search", "get", "forget", "stats", "flush"].every((m) => typeof p[m] === "function");
}
