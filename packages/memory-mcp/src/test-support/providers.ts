import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  BuiltinMemoryProvider,
  MemoryManager,
  MemoryProvider,
  type MemoryHit,
  type MemoryItem,
  type MemorySearchOptions,
  type MemoryStats,
  type SearchableMemory,
  type SearchCapabilities,
  type ToolSchema,
} from "@hermes/memory-core";
import { matchesMemoryFilter, parseMemoryFilter, resolveExpiry } from "@hermes/memory-provider-kit";

/** A temp folder (real path) removed by `cleanup`. */
export function tempHome(prefix = "hermes-mcp-"): { dir: string; cleanup: () => void } {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

function hit(id: string, item: MemoryItem): MemoryHit {
  return {
    id,
    content: item.content,
    kind: item.kind ?? "fact",
    score: 1,
    createdAt: new Date(0).toISOString(),
    metadata: item.metadata ?? {},
    ...(item.userId !== undefined ? { userId: item.userId } : {}),
    ...(item.tags ? { tags: item.tags } : {}),
  };
}

/** How a `ScriptedProvider` behaves: work, throw on every call, or never answer. */
export type Behaviour = "ok" | "throw" | "hang";

/** A provider that is always available, needs no setup and has no settings. */
abstract class FixtureProvider extends MemoryProvider {
  isAvailable(): boolean {
    return true;
  }
  initialize(): void {}
  getConfigSchema() {
    return [];
  }
}

/** A searchable provider kept in memory whose behaviour can be switched at any time. */
export class ScriptedProvider extends FixtureProvider implements SearchableMemory {
  readonly name: string = "scripted";
  behaviour: Behaviour = "ok";
  readonly items = new Map<string, MemoryItem>();
  private next = 1;
  getToolSchemas(): ToolSchema[] {
    return [
      {
        name: "scripted_echo",
        description: "Echo the text back.",
        parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
      },
    ];
  }

  private act<T>(value: () => T): Promise<T> {
    if (this.behaviour === "throw") return Promise.reject(new Error("provider exploded"));
    if (this.behaviour === "hang") return new Promise<T>(() => {});
    return Promise.resolve(value());
  }

  override handleToolCall(_name: string, args: Record<string, unknown>): Promise<string> {
    return this.act(() => JSON.stringify({ echo: args.text }));
  }
  remember(item: MemoryItem): Promise<string> {
    return this.act(() => {
      const id = `m${this.next++}`;
      this.items.set(id, item);
      return id;
    });
  }
  search(query: string, options: MemorySearchOptions = {}): Promise<MemoryHit[]> {
    return this.act(() =>
      [...this.items.entries()]
        .filter(([, item]) => options.userId === undefined || item.userId === options.userId)
        .filter(([, item]) => query.split(/\s+/).some((w) => item.content.toLowerCase().includes(w.toLowerCase())))
        .slice(0, options.limit ?? 10)
        .map(([id, item]) => hit(id, item)),
    );
  }
  get(id: string): Promise<MemoryHit | null> {
    return this.act(() => {
      const item = this.items.get(id);
      return item ? hit(id, item) : null;
    });
  }
  forget(id: string): Promise<boolean> {
    return this.act(() => this.items.delete(id));
  }
  stats(): Promise<MemoryStats> {
    return this.act(() => ({ items: this.items.size, byKind: { turn: 0, fact: this.items.size, checkpoint: 0 } }));
  }
  flush(): Promise<void> {
    return this.act(() => undefined);
  }
}

/**
 * A `ScriptedProvider` that declares the `filters` and `expiry` capabilities: it validates and
 * applies filters with the kit (like the reference providers) and records the options it got.
 */
export class FilteringProvider extends ScriptedProvider {
  lastSearch: MemorySearchOptions | undefined;

  capabilities(): SearchCapabilities {
    return { filters: true, expiry: true, erasure: false, update: false };
  }
  purgeExpired(): number {
    return 0;
  }
  override remember(item: MemoryItem): Promise<string> {
    resolveExpiry(item);
    return super.remember(item);
  }
  override async search(query: string, options: MemorySearchOptions = {}): Promise<MemoryHit[]> {
    this.lastSearch = options;
    const filter = parseMemoryFilter(options, { ignore: ["limit"] });
    const hits = await super.search(query, { limit: 1000 });
    return hits
      .filter((h) => matchesMemoryFilter(filter, { ...h, createdAt: Date.parse(h.createdAt), tags: h.tags ?? [] }))
      .slice(0, options.limit ?? 10);
  }
}

/** A searchable provider whose own tools repeat the generic actions under several spellings, beside two tools of its own. */
export class DuplicatingProvider extends ScriptedProvider {
  override readonly name = "dup";
  readonly toolCalls: string[] = [];

  override getToolSchemas(): ToolSchema[] {
    return ["dup_memory_search", "dup_forget", "memory_get", "remember", "dup_memory_list", "dup_profile"].map((name) => ({
      name,
      description: `The provider's own ${name}.`,
      parameters: { type: "object", properties: {} },
    }));
  }

  override handleToolCall(name: string): Promise<string> {
    if (name !== "dup_profile") this.toolCalls.push(name);
    return Promise.resolve(JSON.stringify({ tool: name }));
  }
}

/** A provider with tools and no `SearchableMemory`, whose tool names look like generic actions. */
export class ToolsOnlyProvider extends FixtureProvider {
  readonly name = "tools";

  getToolSchemas(): ToolSchema[] {
    return ["tools_search", "tools_remember"].map((name) => ({ name, description: name, parameters: { type: "object", properties: {} } }));
  }
  override handleToolCall(name: string): Promise<string> {
    return Promise.resolve(JSON.stringify({ tool: name }));
  }
}

/** A manager with built-in memory in `home` plus the given providers, initialised. */
export async function openManager(home: string, ...extra: MemoryProvider[]): Promise<MemoryManager> {
  const manager = new MemoryManager({ hermesHome: home });
  manager.addProvider(new BuiltinMemoryProvider());
  for (const provider of extra) manager.addProvider(provider);
  await manager.initializeAll("mcp-test", { hermesHome: home });
  return manager;
}
