import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js";
import {
  scrubSecrets,
  searchCapabilities,
  type MemoryItem,
  type MemoryKind,
  type MemoryProvider,
  type MemorySearchOptions,
  type SearchableMemory,
} from "@hermes/memory-core";
import {
  MEMORY_TOOL_LIMITS,
  memoryToolSchemas,
  REMEMBER_TOOL_PROPERTIES,
  ToolRouter,
  ToolUserScope,
  type MemoryToolSchemaOptions,
  type ToolItemScope,
} from "@hermes/memory-provider-kit";
import { boundedProviderCall } from "./bounded.js";
import { toolJson } from "./tool-result.js";

/** The generic tools offered for a provider that implements `SearchableMemory`, one per action. */
export const SEARCHABLE_TOOL_NAMES = ["search", "remember", "forget", "get"] as const;

/** One of `SEARCHABLE_TOOL_NAMES`. */
export type SearchableToolName = (typeof SEARCHABLE_TOOL_NAMES)[number];

const KINDS: readonly MemoryKind[] = ["turn", "fact", "checkpoint"];

// The generic tools are the kit's memory tools without a prefix. Search never offers a `userId`
// filter: a server for one user always searches that user's items, and a server for a home must
// not offer a model a way to read another user's. Remember takes the kind of item to store.
const GENERIC_TOOLS: Omit<MemoryToolSchemaOptions, "capabilities"> = {
  prefix: "",
  actions: SEARCHABLE_TOOL_NAMES,
  store: "the memory provider's store",
  withoutFilterKeys: ["userId"],
  extraProperties: { remember: { kind: { type: "string", enum: [...KINDS], description: "Kind of item (default fact)." } } },
};

// `content` and `tags` of a remember call are checked against the same schema, and by the same
// validator, as the providers' own remember tools.
const REMEMBER_ARGS = new ToolRouter({
  owner: "the memory MCP server",
  schemas: [
    {
      name: "remember",
      description: "content and tags of a remember call",
      parameters: { type: "object", properties: REMEMBER_TOOL_PROPERTIES },
    },
  ],
});

const EXTENDED_FILTER_KEYS = ["tags", "createdAt", "metadata"] as const;

/** The searchable tools as `provider` supports them: filters and expiry appear only when it declares them. */
export function searchableTools(provider: SearchableMemory): Tool[] {
  const { filters, expiry } = searchCapabilities(provider);
  return memoryToolSchemas({ ...GENERIC_TOOLS, capabilities: { filters, expiry } }).map((schema) => ({
    name: schema.name,
    description: schema.description,
    inputSchema: schema.parameters as Tool["inputSchema"],
  }));
}

// Every argument a generic tool can take with some provider. Any other is refused, so that a
// misspelt filter never widens a search; one the provider lacks the capability for is refused by
// the tool itself, naming the capability.
const ARGUMENT_NAMES = new Map(
  memoryToolSchemas({ ...GENERIC_TOOLS, capabilities: { filters: true, expiry: true } }).map((schema) => [
    schema.name,
    new Set(Object.keys((schema.parameters as { properties: object }).properties)),
  ]),
);

function checkArgumentNames(provider: SearchableMemory, name: SearchableToolName, args: Record<string, unknown>): void {
  const unknown = Object.keys(args).find((key) => !ARGUMENT_NAMES.get(name)!.has(key));
  if (unknown === undefined) return;
  const offered = searchableTools(provider).find((tool) => tool.name === name)!;
  throw new ToolInputError(
    `unknown argument '${unknown.slice(0, 40)}'; ${name} takes ${Object.keys(offered.inputSchema.properties ?? {}).join(", ")}`,
  );
}

/**
 * The generic action a provider's own tool does again, or `null`. A provider's tool is the same
 * action when its name is the action, optionally after `memory_` and after the provider's name
 * (`.` and `-` read as `_`): `sqlite_memory_search`, `mem0_search`, `memory_get` and `forget` all
 * are; `sqlite_memory_list` or `honcho_profile` are not. The rule is by name so that it holds for any
 * provider, ours or a third party's, without the provider knowing about this server.
 */
export function searchableActionOf(toolName: string, providerName: string): SearchableToolName | null {
  const prefix = providerName.toLowerCase().replace(/[^a-z0-9]+/g, "_");
  let rest = toolName.toLowerCase();
  if (rest.startsWith(`${prefix}_`)) rest = rest.slice(prefix.length + 1);
  if (rest.startsWith("memory_")) rest = rest.slice("memory_".length);
  return (SEARCHABLE_TOOL_NAMES as readonly string[]).includes(rest) ? (rest as SearchableToolName) : null;
}

/** A tool argument the caller got wrong; reported as a tool error naming the argument. */
export class ToolInputError extends Error {}

function stringArg(args: Record<string, unknown>, name: string, required: boolean): string | undefined {
  const value = args[name];
  if (value === undefined && !required) return undefined;
  if (typeof value !== "string" || (required && value.trim() === "")) {
    throw new ToolInputError(`'${name}' must be a${required ? " non-empty" : ""} string`);
  }
  return value;
}

/** The `id` argument: text, or a whole number (read as its decimal text). */
function idArg(args: Record<string, unknown>): string {
  return Number.isSafeInteger(args.id) ? String(args.id) : stringArg(args, "id", true)!;
}

function kindArg(args: Record<string, unknown>): MemoryKind | undefined {
  const kind = stringArg(args, "kind", false);
  if (kind !== undefined && !KINDS.includes(kind as MemoryKind)) throw new ToolInputError(`'kind' must be one of ${KINDS.join(", ")}`);
  return kind as MemoryKind | undefined;
}

/** Who a generic tool call acts for and how long it may take. */
export interface SearchableCallScope {
  timeoutMs: number;
  /** The session remembered items belong to. */
  sessionId: string;
  /** The user every call is confined to (without one, the calls reach every item of the home): the kit's boundary of model tools. */
  users: ToolUserScope;
}

type Searchable = MemoryProvider & SearchableMemory;

/** Run one generic tool on `provider`, within `scope`. Throws `ToolInputError` for bad arguments. */
export async function callSearchable(
  provider: Searchable,
  name: SearchableToolName,
  args: Record<string, unknown>,
  scope: SearchableCallScope,
): Promise<CallToolResult> {
  const bounded = <T>(what: string, work: () => PromiseLike<T> | T): Promise<T> =>
    boundedProviderCall(`Memory provider '${provider.name}' ${what}()`, scope.timeoutMs, work);
  checkArgumentNames(provider, name, args);
  switch (name) {
    case "search": {
      const options = scope.users.within(searchOptions(provider, args));
      const query = scrubSecrets(stringArg(args, "query", true)!);
      const hits = await bounded("search", () => provider.search(query, options));
      return toolJson({ hits });
    }
    case "remember": {
      const item = rememberItem(provider, args, scope);
      const id = await bounded("remember", () => provider.remember(item));
      return toolJson({ success: true, id });
    }
    case "get": {
      const id = idArg(args);
      const hit = await bounded("get", () => provider.get(id));
      // Another user's item is answered exactly like one that does not exist.
      if (!hit || (scope.users.userId !== undefined && hit.userId !== scope.users.userId)) return noSuchItem(provider, id);
      return toolJson({ hit });
    }
    case "forget": {
      const id = idArg(args);
      const removed = await bounded("forget", () => forgetOne(provider, scope.users.item(id)));
      return removed ? toolJson({ success: true, id }) : noSuchItem(provider, id);
    }
  }
}

/**
 * Forget the item `scope` names, only when it is the scope's user's. With the `erasure` capability
 * this is one call with the id and the user together; otherwise the item is read first and
 * forgotten only when it is the user's. Either way an id of another user's costs what an unused id
 * costs: one lookup that finds nothing to delete.
 */
async function forgetOne(provider: Searchable, scope: ToolItemScope): Promise<boolean> {
  const id = scope.ids[0]!;
  if (scope.userId === undefined) return (await provider.forget(id)) === true;
  if (searchCapabilities(provider).erasure) return (await provider.forgetWhere!(scope)) > 0;
  const hit = await provider.get(id);
  return hit !== null && hit.userId === scope.userId && (await provider.forget(id)) === true;
}

function noSuchItem(provider: Searchable, id: string): CallToolResult {
  const error = `No item '${id}' in the '${provider.name}' memory store (already forgotten, or never stored); use search to find the ids of stored items.`;
  return toolJson({ success: false, id, error }, true);
}

function searchOptions(provider: Searchable, args: Record<string, unknown>): MemorySearchOptions {
  const { default: fallback, max } = MEMORY_TOOL_LIMITS.search;
  const limit = args.limit === undefined ? fallback : args.limit;
  if (typeof limit !== "number" || !Number.isInteger(limit) || limit < 1 || limit > max)
    throw new ToolInputError(`'limit' must be an integer from 1 to ${max}`);
  const session = stringArg(args, "sessionId", false);
  const options: MemorySearchOptions = { limit, ...(session ? { sessionId: session } : {}) };
  const capabilities = searchCapabilities(provider);
  if (capabilities.filters && Array.isArray(args.kind)) {
    options.kind = args.kind as MemoryKind[]; // the provider validates the list
  } else {
    const kind = kindArg(args);
    if (kind) options.kind = kind;
  }
  for (const key of EXTENDED_FILTER_KEYS) {
    if (args[key] === undefined) continue;
    if (!capabilities.filters) throw new ToolInputError(`'${key}' needs a provider that supports filters; '${provider.name}' does not`);
    (options as Record<string, unknown>)[key] = args[key]; // validated by the provider (INVALID_ARGUMENT)
  }
  return options;
}

function rememberItem(provider: Searchable, args: Record<string, unknown>, scope: SearchableCallScope): MemoryItem {
  const content = stringArg(args, "content", true)!;
  const tags = args.tags === undefined ? undefined : args.tags;
  const invalid = REMEMBER_ARGS.validate("remember", { content, ...(tags === undefined ? {} : { tags }) });
  if (invalid) throw new ToolInputError(`${invalid} (longer text: split it into self-contained facts)`);
  // Everything leaving through a provider is scrubbed, like the manager does for its hooks.
  const item: MemoryItem = scope.users.within({
    content: scrubSecrets(content),
    kind: kindArg(args) ?? "fact",
    sessionId: scope.sessionId,
    ...(tags ? { tags: tags as string[] } : {}),
  });
  for (const key of ["ttlMs", "expiresAt"] as const) {
    if (args[key] === undefined) continue;
    if (!searchCapabilities(provider).expiry)
      throw new ToolInputError(`'${key}' needs a provider that supports expiry; '${provider.name}' does not`);
    (item as unknown as Record<string, unknown>)[key] = args[key]; // validated by the provider (INVALID_ARGUMENT)
  }
  return item;
}
