/**
 * The model-facing tools of a memory store (search, remember, forget, list, get), built in one
 * place so that every provider's tools and the MCP server's generic tools take the same arguments
 * with the same bounds, and say the same defaults. Handlers apply the limits of
 * `MEMORY_TOOL_LIMITS`, the numbers the schemas document.
 */
import {
  MEMORY_FILTER_TOOL_PROPERTIES,
  type JsonSchema,
  type MemoryFilter,
  type SearchCapabilities,
  type ToolSchema,
} from "@hermes/memory-core";
import { DEFAULT_SEARCH_LIMIT, MEMORY_ITEM_KINDS } from "./memory-filter.js";

/** One tool of a memory store. */
export type MemoryToolAction = "search" | "remember" | "forget" | "list" | "get";

/**
 * The `limit` of the tools that return several items: the number a call without `limit` returns
 * at most (`default`), and the largest a call may ask for (`max`). The search default is the
 * `search()` API's (`DEFAULT_SEARCH_LIMIT`).
 */
export const MEMORY_TOOL_LIMITS: {
  readonly search: { readonly default: number; readonly max: number };
  readonly list: { readonly default: number; readonly max: number };
} = Object.freeze({
  search: Object.freeze({ default: DEFAULT_SEARCH_LIMIT, max: 50 }),
  list: Object.freeze({ default: 20, max: 100 }),
});

/** Most characters of text a model may store through a remember tool in one call. */
const MAX_TOOL_CONTENT_CHARS = 20_000;
/** Most tags a model may give an item through a remember tool, and most characters per tag. */
const MAX_TOOL_TAGS = 16;
const MAX_TOOL_TAG_CHARS = 64;

/**
 * JSON Schema of the `content` and `tags` properties of a tool that stores a fact: one set of
 * limits for every model-facing remember tool (text up to 20,000 characters; at most 16 tags of up
 * to 64 characters). The programmatic `remember()` API takes longer text; a tool call is what a
 * model writes in one turn.
 */
export const REMEMBER_TOOL_PROPERTIES = {
  content: { type: "string", minLength: 1, maxLength: MAX_TOOL_CONTENT_CHARS, description: "The fact to remember, self-contained." },
  tags: {
    type: "array",
    items: { type: "string", minLength: 1, maxLength: MAX_TOOL_TAG_CHARS },
    maxItems: MAX_TOOL_TAGS,
    description: "Optional labels.",
  },
} as const;

/** The properties a remember tool adds for a store that honours expiry. */
const EXPIRY_TOOL_PROPERTIES = {
  ttlMs: { type: "integer", minimum: 1, description: "Forget the item this many milliseconds from now." },
  expiresAt: { type: "string", description: "Forget the item at this ISO 8601 time (instead of ttlMs)." },
} as const;

/** Options of `memoryToolSchemas`. */
export interface MemoryToolSchemaOptions {
  /** Put before each action to name its tool: `sqlite_memory_` names `sqlite_memory_search`; `""` names `search`. */
  prefix: string;
  /** The tools to build, in the order they are listed. */
  actions: readonly MemoryToolAction[];
  /** What the descriptions call the store, e.g. `long-term memory`. */
  store: string;
  /** How search finds items, for its description. Default `by keywords`. */
  searchesBy?: string;
  /**
   * What the tools' handlers honour: `filters` offers every `MemoryFilter` key on search (without
   * it, one `kind` and `sessionId`); `expiry` offers `ttlMs` and `expiresAt` on remember.
   */
  capabilities?: Partial<Pick<SearchCapabilities, "filters" | "expiry">>;
  /** Filter keys search does not offer, e.g. `userId` where every call acts for one user. */
  withoutFilterKeys?: readonly (keyof MemoryFilter)[];
  /** Properties one tool takes besides the shared ones (listed after them), e.g. a switch of a provider's search. */
  extraProperties?: Partial<Record<MemoryToolAction, Readonly<Record<string, JsonSchema>>>>;
}

const ONE_KIND = {
  type: "string",
  enum: [...MEMORY_ITEM_KINDS],
  description: "Only items of this kind: turn, fact or checkpoint.",
} as const;

/** The id of one item; sequential ids may come back as numbers from a model. */
const ID_PROPERTY = {
  type: ["string", "integer"],
  minLength: 1,
  description: "Id of the item, as the tool that found it returned it.",
} as const;

function objectSchema(properties: Readonly<Record<string, JsonSchema>>, required: readonly string[] = []): JsonSchema {
  return {
    type: "object",
    properties: { ...properties },
    ...(required.length > 0 ? { required: [...required] } : {}),
    additionalProperties: false,
  };
}

function searchFilterProperties(options: MemoryToolSchemaOptions): Record<string, JsonSchema> {
  if (options.capabilities?.filters !== true) return { kind: ONE_KIND, sessionId: MEMORY_FILTER_TOOL_PROPERTIES.sessionId };
  const without = new Set<string>(options.withoutFilterKeys ?? []);
  return Object.fromEntries(Object.entries(MEMORY_FILTER_TOOL_PROPERTIES).filter(([key]) => !without.has(key)));
}

/** "a or b" / "a, b or c". */
function either(names: readonly string[]): string {
  return names.length <= 1 ? (names[0] ?? "") : `${names.slice(0, -1).join(", ")} or ${names[names.length - 1]}`;
}

/**
 * The JSON Schemas (bare OpenAI function form) of a memory store's tools, one per action:
 * - `search`: `query` (required) and `limit` (`MEMORY_TOOL_LIMITS.search`), then the filter keys
 *   of `capabilities` (core's `MEMORY_FILTER_TOOL_PROPERTIES`, less `withoutFilterKeys`);
 * - `remember`: `REMEMBER_TOOL_PROPERTIES`, and `ttlMs` / `expiresAt` with `expiry`;
 * - `forget` and `get`: `id` (text, or a whole number);
 * - `list`: `limit` (`MEMORY_TOOL_LIMITS.list`) and one `kind`, newest first.
 * Every schema refuses properties it does not name (`additionalProperties: false`).
 */
export function memoryToolSchemas(options: MemoryToolSchemaOptions): ToolSchema[] {
  const name = (action: MemoryToolAction): string => `${options.prefix}${action}`;
  const extra = (action: MemoryToolAction): Readonly<Record<string, JsonSchema>> => options.extraProperties?.[action] ?? {};
  const idSources = either((["search", "list", "remember"] as const).filter((a) => options.actions.includes(a)).map(name));
  const { search, list } = MEMORY_TOOL_LIMITS;
  const build: Record<MemoryToolAction, () => ToolSchema> = {
    search: () => {
      const filters = searchFilterProperties(options);
      return {
        name: name("search"),
        description:
          `Search ${options.store} (past conversation turns, saved facts and compression checkpoints) ${options.searchesBy ?? "by keywords"}. ` +
          `Returns the best matches with their ids. Optional filters (${Object.keys(filters).join(", ")}) restrict which items are searched; every filter given must hold.`,
        parameters: objectSchema(
          {
            query: { type: "string", minLength: 1, description: "What to look for, in plain words." },
            limit: { type: "integer", minimum: 1, maximum: search.max, description: `Most results to return (default ${search.default}).` },
            ...filters,
            ...extra("search"),
          },
          ["query"],
        ),
      };
    },
    remember: () => ({
      name: name("remember"),
      description: `Save a durable fact to ${options.store} (a preference, decision or detail worth recalling in later sessions). Returns its id.`,
      parameters: objectSchema(
        { ...REMEMBER_TOOL_PROPERTIES, ...(options.capabilities?.expiry === true ? EXPIRY_TOOL_PROPERTIES : {}), ...extra("remember") },
        ["content"],
      ),
    }),
    forget: () => ({
      name: name("forget"),
      description: `Delete one item from ${options.store} by the id ${idSources || "a search"} returned.`,
      parameters: objectSchema({ id: ID_PROPERTY, ...extra("forget") }, ["id"]),
    }),
    list: () => ({
      name: name("list"),
      description: `List the most recent items of ${options.store}, newest first.`,
      parameters: objectSchema({
        limit: { type: "integer", minimum: 1, maximum: list.max, description: `Most items to return (default ${list.default}).` },
        kind: ONE_KIND,
        ...extra("list"),
      }),
    }),
    get: () => ({
      name: name("get"),
      description: `Read one item of ${options.store} by the id ${idSources || "a search"} returned.`,
      parameters: objectSchema({ id: ID_PROPERTY, ...extra("get") }, ["id"]),
    }),
  };
  return options.actions.map((action) => build[action]());
}
