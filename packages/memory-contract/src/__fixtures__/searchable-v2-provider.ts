// A correct SearchableMemory v2 provider built on the minimal provider: filters evaluated with the
// kit's parseMemoryFilter/matchesMemoryFilter, expiry, scoped erasure and update, all declared in
// capabilities(). Its broken variants (one mistake each) sit at the end of the file.
import {
  HermesMemoryError,
  type ForgetScope,
  type MemoryHit,
  type MemoryItem,
  type MemorySearchOptions,
  type MemoryUpdate,
  type SearchCapabilities,
} from "@hermes/memory-core";
import {
  checkWholeStoreErasure,
  isEmptyFilter,
  matchesMemoryFilter,
  parseForgetScope,
  parseMemoryFilter,
  resolveExpiry,
  type FilterRecord,
  type ParsedForgetScope,
  type ParsedMemoryFilter,
} from "@hermes/memory-provider-kit";
import { MinimalProvider, type StoredItem } from "./minimal-provider.js";

/** A stored item with its expiry in epoch milliseconds (`expiresAt` holds the same time as ISO text). */
export type V2Item = StoredItem & { expiresAtMs?: number };

const ALL_CAPABILITIES: SearchCapabilities = { filters: true, expiry: true, erasure: true, update: true };

function terms(text: string): string[] {
  return text.toLowerCase().match(/[a-z0-9]+/g) ?? [];
}

function invalid(message: string): never {
  throw new HermesMemoryError({ code: "INVALID_ARGUMENT", message });
}

export class SearchableV2Provider extends MinimalProvider {
  capabilities(): SearchCapabilities {
    return { ...ALL_CAPABILITIES };
  }

  protected get v2Items(): V2Item[] {
    return this.items as V2Item[];
  }

  override addItem(item: MemoryItem & { id?: string }): string {
    const expiresAtMs = resolveExpiry(item);
    const id = super.addItem(item);
    const stored = this.v2Items[this.v2Items.length - 1]!;
    if (Array.isArray(item.tags) && item.tags.length > 0) stored.tags = item.tags.map(String);
    if (expiresAtMs !== null) this.setExpiry(stored, expiresAtMs);
    return id;
  }

  protected setExpiry(item: V2Item, expiresAtMs: number | null): void {
    if (expiresAtMs === null) {
      delete item.expiresAtMs;
      delete item.expiresAt;
    } else {
      item.expiresAtMs = expiresAtMs;
      item.expiresAt = new Date(expiresAtMs).toISOString();
    }
  }

  protected isExpired(item: V2Item, now = Date.now()): boolean {
    return item.expiresAtMs !== undefined && item.expiresAtMs <= now;
  }

  protected record(item: V2Item): FilterRecord {
    return {
      id: item.id,
      kind: item.kind,
      sessionId: item.sessionId,
      userId: item.userId,
      tags: item.tags,
      metadata: item.metadata,
      createdAt: Date.parse(item.createdAt),
    };
  }

  protected toHit(item: V2Item, score: number): MemoryHit {
    const { expiresAtMs: _ms, ...hit } = item;
    return { ...hit, score };
  }

  /** The items search ranks (unexpired), as the search index sees them. */
  protected indexView(): V2Item[] {
    const now = Date.now();
    return this.v2Items.filter((i) => !this.isExpired(i, now));
  }

  protected rank(query: string, candidates: readonly V2Item[], limit: number): MemoryHit[] {
    const wanted = new Set(terms(query));
    const hits: MemoryHit[] = [];
    for (const item of candidates) {
      const score = terms(item.content).filter((t) => wanted.has(t)).length;
      if (score > 0) hits.push(this.toHit(item, score));
    }
    return hits.sort((a, b) => b.score - a.score).slice(0, limit);
  }

  protected parseSearch(options: MemorySearchOptions): { filter: ParsedMemoryFilter; limit: number } {
    const filter = parseMemoryFilter(options, { what: "search options", ignore: ["limit"] });
    const limit = options.limit ?? 10;
    if (!Number.isInteger(limit) || limit < 1) invalid(`search options: limit must be a positive integer; got ${String(limit)}.`);
    return { filter, limit };
  }

  override search(query: string, options: MemorySearchOptions = {}): MemoryHit[] {
    const { filter, limit } = this.parseSearch(options);
    return this.rank(query, this.indexView().filter((i) => matchesMemoryFilter(filter, this.record(i))), limit);
  }

  override get(id: string): MemoryHit | null {
    const item = this.v2Items.find((i) => i.id === id);
    return item && !this.isExpired(item) ? this.toHit(item, 0) : null;
  }

  protected parseScope(scope: ForgetScope): ParsedForgetScope {
    return parseForgetScope(scope);
  }

  /** Refuses an unconfirmed erasure of every item (before anything is erased). */
  protected checkWholeStore(scope: ParsedForgetScope, erasing: number): void {
    checkWholeStoreErasure(scope, erasing, this.v2Items.length);
  }

  /** Writes the current items to disk now (after any queued write), so the caller's change is durable. */
  protected async persistNow(): Promise<void> {
    await this.pending;
    await this.persist();
  }

  async forgetWhere(scope: ForgetScope): Promise<number> {
    const parsed = this.parseScope(scope);
    const filter = parsed.filter;
    this.checkWholeStore(parsed, this.v2Items.filter((i) => matchesMemoryFilter(filter, this.record(i))).length);
    const before = this.items.length;
    this.items = this.v2Items.filter((i) => !matchesMemoryFilter(filter, this.record(i)));
    await this.persistNow();
    return before - this.items.length;
  }

  async update(id: string, changes: MemoryUpdate): Promise<boolean> {
    if (changes === null || typeof changes !== "object") invalid("update() needs an object of changes.");
    if (changes.content !== undefined && (typeof changes.content !== "string" || changes.content.trim() === "")) {
      invalid("update(): content must be non-empty text.");
    }
    if (changes.tags !== undefined && (!Array.isArray(changes.tags) || changes.tags.some((t) => typeof t !== "string"))) {
      invalid("update(): tags must be a list of text.");
    }
    if (changes.metadata !== undefined && (changes.metadata === null || typeof changes.metadata !== "object" || Array.isArray(changes.metadata))) {
      invalid("update(): metadata must be an object.");
    }
    const expiresAtMs = changes.expiresAt === undefined ? undefined : changes.expiresAt === null ? null : resolveExpiry({ expiresAt: changes.expiresAt });
    const item = this.v2Items.find((i) => i.id === id);
    if (!item || this.isExpired(item)) return false;
    this.applyUpdate(item, changes, expiresAtMs);
    await this.persistNow();
    return true;
  }

  protected applyUpdate(item: V2Item, changes: MemoryUpdate, expiresAtMs: number | null | undefined): void {
    if (changes.content !== undefined) item.content = changes.content;
    if (changes.tags !== undefined) item.tags = [...changes.tags];
    if (changes.metadata !== undefined) item.metadata = { ...changes.metadata };
    if (expiresAtMs !== undefined) this.setExpiry(item, expiresAtMs);
  }

  async purgeExpired(): Promise<number> {
    const now = Date.now();
    const before = this.items.length;
    this.items = this.v2Items.filter((i) => !this.isExpired(i, now));
    const purged = before - this.items.length;
    if (purged > 0) await this.persistNow();
    return purged;
  }
}

// --- broken variants, one mistake each ------------------------------------------------------------

/**
 * Passes sessionId and userId to its query but applies the other filter conditions to the
 * unfiltered top `limit`: when the best matches fail the filter, it returns too few items.
 */
export class PostFilterTopKProvider extends SearchableV2Provider {
  override search(query: string, options: MemorySearchOptions = {}): MemoryHit[] {
    const { filter, limit } = this.parseSearch(options);
    const scoped = this.indexView().filter(
      (i) => (filter.userId === undefined || i.userId === filter.userId) && (filter.sessionId === undefined || i.sessionId === filter.sessionId),
    );
    const byId = new Map(this.v2Items.map((i) => [i.id, i]));
    return this.rank(query, scoped, limit).filter((h) => matchesMemoryFilter(filter, this.record(byId.get(h.id)!)));
  }
}

/**
 * A provider without the v2 capabilities that searches the instance's own user (ctx.userId)
 * instead of the userId the caller asked for.
 */
export class IgnoresRequestedUserProvider extends SearchableV2Provider {
  override capabilities(): SearchCapabilities {
    return { filters: false, expiry: false, erasure: false, update: false };
  }

  override search(query: string, options: MemorySearchOptions = {}): MemoryHit[] {
    const { userId: _requested, ...rest } = options;
    return super.search(query, { ...rest, ...(this.userId !== undefined ? { userId: this.userId } : {}) });
  }
}

/** forgetWhere deletes the records get() reads but leaves the erased text in the search index. */
export class ErasureLeavesTextProvider extends SearchableV2Provider {
  private readonly erased = new Set<string>();

  override async forgetWhere(scope: ForgetScope): Promise<number> {
    const parsed = this.parseScope(scope);
    const filter = parsed.filter;
    this.checkWholeStore(parsed, this.v2Items.filter((i) => !this.erased.has(i.id) && matchesMemoryFilter(filter, this.record(i))).length);
    let count = 0;
    for (const item of this.v2Items) {
      if (!this.erased.has(item.id) && matchesMemoryFilter(filter, this.record(item))) {
        this.erased.add(item.id);
        count++;
      }
    }
    await this.persistNow();
    return count;
  }

  override get(id: string): MemoryHit | null {
    return this.erased.has(id) ? null : super.get(id);
  }
}

/** Accepts expiresAt / ttlMs but never expires anything: expired items stay searchable and purgeExpired finds none. */
export class IgnoresExpiryProvider extends SearchableV2Provider {
  protected override isExpired(): boolean {
    return false;
  }
}

/** update() changes the stored record but the search index keeps serving the old text. */
export class UpdateKeepsOldTextProvider extends SearchableV2Provider {
  private readonly staleIndex = new Map<string, V2Item>();

  protected override applyUpdate(item: V2Item, changes: MemoryUpdate, expiresAtMs: number | null | undefined): void {
    if (!this.staleIndex.has(item.id)) this.staleIndex.set(item.id, { ...item });
    super.applyUpdate(item, changes, expiresAtMs);
  }

  protected override indexView(): V2Item[] {
    return super.indexView().map((i) => this.staleIndex.get(i.id) ?? i);
  }
}

/** Validates the createdAt range but leaves it out of the search: a time-scoped search returns items of any time. */
export class IgnoresCreatedAtProvider extends SearchableV2Provider {
  protected override parseSearch(options: MemorySearchOptions): { filter: ParsedMemoryFilter; limit: number } {
    super.parseSearch(options);
    const { createdAt: _range, ...rest } = options;
    return super.parseSearch(rest);
  }
}

/** Falls back to an unfiltered search when the filter does not parse, instead of refusing it. */
export class LenientFilterProvider extends SearchableV2Provider {
  protected override parseSearch(options: MemorySearchOptions): { filter: ParsedMemoryFilter; limit: number } {
    // Lenient about the filter only: the limit is still checked.
    const { limit } = super.parseSearch({ limit: options.limit });
    try {
      return super.parseSearch(options);
    } catch {
      return { filter: {}, limit };
    }
  }
}

/** Treats an empty forgetWhere scope as "every item" (as if confirmed). */
export class EmptyScopeErasesAllProvider extends SearchableV2Provider {
  protected override parseScope(scope: ForgetScope): ParsedForgetScope {
    const filter = parseMemoryFilter(scope, { what: "forgetWhere scope", allowIds: true, ignore: ["confirmAll"] });
    return { filter, confirmAll: isEmptyFilter(filter) || scope.confirmAll === true };
  }
}

/** Erases a scope that matches every item of the store without asking for confirmAll. */
export class WholeStoreErasureProvider extends SearchableV2Provider {
  protected override checkWholeStore(): void {
    // The mistake: no check.
  }
}

/** A correct provider whose flush() takes 1.6 s, longer than the contract's first ttlMs. */
export class SlowFlushV2Provider extends SearchableV2Provider {
  override async flush(): Promise<void> {
    await new Promise((resolve) => setTimeout(resolve, 1_600));
    await super.flush();
  }
}

/** Replaces a limit it cannot use with the default instead of refusing it. */
export class DefaultingLimitProvider extends SearchableV2Provider {
  override search(query: string, options: MemorySearchOptions = {}): MemoryHit[] {
    const limit = typeof options.limit === "number" && options.limit >= 1 ? options.limit : 10;
    return super.search(query, { ...options, limit });
  }
}

/** Accepts any item into its write queue unchecked: a malformed one then fails at search and persist time. */
export class UncheckedItemsProvider extends SearchableV2Provider {
  override checkItem(): void {}
}

/** Remembers which queries found nothing and answers them from that memory, even after new writes. */
export class NegativeSearchCacheProvider extends SearchableV2Provider {
  private readonly missed = new Set<string>();

  override search(query: string, options: MemorySearchOptions = {}): MemoryHit[] {
    const key = `${query}\u0000${JSON.stringify(options)}`;
    if (this.missed.has(key)) return [];
    const hits = super.search(query, options);
    if (hits.length === 0) this.missed.add(key);
    return hits;
  }
}
