/**
 * The remote layout of the vector memory: text, metadata and the lexical signal live in Pinecone,
 * as sparse–dense records on a `dotproduct` index, so every process on every machine that shares
 * the index and namespace sees the same memory and the same ranking. The only local state is the
 * durable outbox of writes Pinecone has not acknowledged yet.
 *
 * Layout of one item (one Pinecone record in the profile's namespace):
 * - id `u<user>.s<session>.<kind>.<key>`: `<user>` / `<session>` are the first 16 hex digits of
 *   the SHA-256 of the user / session id, or `-` when the item has none; `<key>` is a random UUID
 *   or the caller's key. `list` by the prefix `u<user>.` finds every item of a user, and
 *   `u<user>.s<session>.` every item of one of their sessions; the kind is read from the id.
 * - dense values: the embedder's vector, scaled to unit length (so dotproduct = cosine);
 *   sparse values: `encodeDocument(text)` (see sparse-encoder.ts).
 * - metadata: the record metadata of both Pinecone layouts (see pinecone-metadata.ts: `text`,
 *   `kind`, `created_at`, `created_ms`, `expires_at` when the item expires, `session_id`,
 *   `user_id`, `tags`, the caller's metadata as JSON in `extra` and again as `meta_<field>` for
 *   filtering), plus `seq` (order of remembering: epoch ms × 1000 plus a per-process counter from
 *   0 to 999, ordering a session's turns).
 *
 * Search is one hybrid query (dense·alpha + sparse·(1 − alpha)) with the filter translated to
 * Pinecone's metadata filter and "not expired" added, so the hits are the best `limit` among the
 * items that pass. Writes go to the outbox first (fsynced), then to Pinecone in batches; an entry
 * leaves the outbox only once Pinecone acknowledged it, and entries left by a crash or an outage
 * are re-sent by `flush()` and at the next `open`. Recently written and deleted items are served
 * from memory for `readYourWritesMs`, while Pinecone's index catches up.
 */
import { createHash, randomUUID } from "node:crypto";
import {
  HermesMemoryError,
  describeError,
  type ForgetScope,
  type MemoryHit,
  type MemoryItem,
  type MemoryKind,
  type MemorySearchOptions,
  type MemoryStats,
  type MemoryUpdate,
  type SearchCapabilities,
} from "@hermes/memory-core";
import {
  checkpointCopies,
  checkWholeStoreErasure,
  clipQuery,
  MEMORY_ITEM_KINDS,
  parseForgetScope,
  parseMemoryFilter,
  parseMemoryItem,
  parseMemoryUpdate,
  parseSearchLimit,
  type ParsedForgetScope,
  type ParsedMemoryFilter,
} from "@hermes/memory-provider-kit";
import { l2Normalize, type Embedder } from "../embedders/embedder.js";
import type { VectorMetadata } from "../metadata-filter.js";
import { expiredPineconeFilter, PINECONE_USER_FIELD_PREFIX, toPineconeFilter } from "./pinecone-metadata.js";
import type { ExportedItem } from "../backends/maintenance.js";
import { deliverIsolating, Outbox, refusedWritesError } from "./outbox.js";
import { PineconeRemoteClient, type PineconeRemoteClientOptions, type RemoteRecord } from "./pinecone-remote-client.js";
import type { RetryPolicy } from "../retry-policy.js";
import { encodeDocument, encodeQuery, hybridQuery, sparseDot, SPARSE_ENCODER_ID } from "../embedders/sparse-encoder.js";
import {
  buildMetadata,
  CACHE_LIMIT,
  checkMetadataFields,
  checkText,
  IDENTITY_ID,
  invalid,
  itemIdPrefix,
  KEY_PATTERN,
  kindOfId,
  MAX_LIMIT,
  NO_EXPIRY,
  nextSeq,
  passes,
  toHit,
  viewOf,
  type CachedItem,
  type RememberOptions,
} from "./remote-records.js";

/** Options of {@link PineconeRemoteMemory.open}. */
export interface PineconeRemoteMemoryOptions extends Omit<PineconeRemoteClientOptions, "dimensions" | "retry"> {
  /** Dense embeddings (every machine sharing the index must use the same embedder). */
  embedder: Embedder;
  /** The namespace holding this profile's memory, every user's (the same on every machine). */
  namespace: string;
  /** The outbox file, e.g. `$HERMES_HOME/memory/vector/remote-outbox.sqlite`. */
  outboxFile: string;
  /** Weight of the dense (meaning) part of a search, 0..1; the keyword part weighs 1 − alpha (default 0.5). */
  alpha?: number;
  retry?: Partial<RetryPolicy>;
  /** How long recent writes and deletes are served from memory while Pinecone's index catches up (default 60000 ms). */
  readYourWritesMs?: number;
  /** Outbox entries per upsert batch (default 32). */
  batchSize?: number;
  /** Only look (status screens): what the outbox holds is not sent, at open or at `close()`. */
  inspectOnly?: boolean;
}

/**
 * A `SearchableMemory` (filters, expiry, erasure, update) whose items live only in Pinecone; see
 * the top of this file for the layout. Open it with {@link PineconeRemoteMemory.open}, close it
 * with `close()`.
 */
export class PineconeRemoteMemory {
  readonly namespace: string;
  readonly indexName: string;
  readonly outbox: Outbox;
  private readonly client: PineconeRemoteClient;
  private readonly embedder: Embedder;
  private readonly alpha: number;
  private readonly rywMs: number;
  private readonly batchSize: number;
  private readonly recent = new Map<string, CachedItem>();
  private sending: Promise<void> | null = null;
  private identity: Promise<void> | null = null;
  private lastFailure: unknown = null;
  private closed = false;
  /** Pinecone took a write from this instance (so a write it refuses alone is refused for its content). */
  private storeAccepted = false;
  /** What `refusedWritesError` said when the outbox was closed. */
  private refusedAtClose: HermesMemoryError | null = null;
  private readonly inspectOnly: boolean;

  private constructor(options: PineconeRemoteMemoryOptions, outbox: Outbox) {
    this.namespace = options.namespace;
    this.indexName = options.indexName;
    this.embedder = options.embedder;
    this.alpha = options.alpha ?? 0.5;
    this.rywMs = options.readYourWritesMs ?? 60_000;
    this.batchSize = options.batchSize ?? 32;
    this.outbox = outbox;
    this.inspectOnly = options.inspectOnly === true;
    this.client = new PineconeRemoteClient({ ...options, dimensions: options.embedder.dimensions });
  }

  /**
   * Open the outbox (creating it) and start re-sending what it holds. Throws `INVALID_ARGUMENT`
   * for a bad `alpha` or namespace, `STORAGE_FAILED` when the outbox cannot be created. No network
   * call is awaited: Pinecone is first contacted by the background re-send or the first call.
   */
  static open(options: PineconeRemoteMemoryOptions): PineconeRemoteMemory {
    checkRemoteOptions(options);
    return PineconeRemoteMemory.start(options, Outbox.open(options.outboxFile));
  }

  /**
   * `open` for the provider's `initialize()`: waiting for another process's lock on the outbox
   * leaves the event loop free.
   */
  static async openAsync(options: PineconeRemoteMemoryOptions): Promise<PineconeRemoteMemory> {
    checkRemoteOptions(options);
    return PineconeRemoteMemory.start(options, await Outbox.openAsync(options.outboxFile));
  }

  private static start(options: PineconeRemoteMemoryOptions, outbox: Outbox): PineconeRemoteMemory {
    const store = new PineconeRemoteMemory(options, outbox);
    if (options.inspectOnly !== true && store.outbox.count() > 0) store.kick();
    return store;
  }

  /** The namespace holding the one record that names the embedder and sparse encoder the items were written with. */
  get identityNamespace(): string {
    return `${this.namespace}.hermes-identity`;
  }

  /**
   * Check once per process that the namespace's items were written with this embedder and sparse
   * encoder (recording them when the namespace has no identity yet): scores of vectors from
   * different embedders or encoders cannot be compared, so mixing them would silently spoil every
   * ranking. Throws `EMBEDDING_DIMENSION_MISMATCH` naming both and the fix (kept for later calls);
   * a network failure is thrown as it is and the check is retried by the next call.
   */
  private checkIdentity(budgetMs?: number): Promise<void> {
    this.identity ??= (async () => {
      const wanted = { embedder: this.embedder.id, dimensions: this.embedder.dimensions, sparse_encoder: SPARSE_ENCODER_ID };
      const stored = (await this.client.fetch(this.identityNamespace, [IDENTITY_ID], budgetMs)).get(IDENTITY_ID);
      if (!stored) {
        // An inspection writes nothing: the first write records the identity.
        if (this.inspectOnly) return;
        const unit = new Array<number>(this.embedder.dimensions).fill(0);
        unit[0] = 1;
        await this.client.upsert(
          this.identityNamespace,
          [{ id: IDENTITY_ID, values: unit, metadata: { ...wanted, layout: "remote" } }],
          budgetMs,
        );
        return;
      }
      const m = stored.metadata;
      if (m.embedder !== wanted.embedder || m.dimensions !== wanted.dimensions || m.sparse_encoder !== wanted.sparse_encoder) {
        throw new HermesMemoryError({
          code: "EMBEDDING_DIMENSION_MISMATCH",
          message:
            `The Pinecone namespace "${this.namespace}" of index "${this.indexName}" holds items written with embedder ${String(m.embedder)} (${String(m.dimensions)} dimensions) and sparse encoder ${String(m.sparse_encoder)}, ` +
            `but this process uses embedder ${wanted.embedder} (${wanted.dimensions} dimensions) and sparse encoder ${wanted.sparse_encoder}; their scores cannot be mixed. ` +
            `Configure the same embedder on every machine, or use another namespace (memory.vector.pinecone_namespace) and move the items there with \`hermes-memory vector reindex --to remote\`.`,
        });
      }
    })().catch((error: unknown) => {
      if (!HermesMemoryError.hasCode(error, "EMBEDDING_DIMENSION_MISMATCH")) this.identity = null;
      throw error;
    });
    return this.identity;
  }

  /** Every optional part of `SearchableMemory` is implemented. */
  capabilities(): SearchCapabilities {
    return { filters: true, expiry: true, erasure: true, update: true };
  }

  /** Writes not acknowledged by Pinecone yet (in the outbox). */
  get pendingWrites(): number {
    return this.outbox.count();
  }

  private assertOpen(): void {
    if (this.closed)
      throw new HermesMemoryError({ code: "PROVIDER_UNAVAILABLE", message: "This Pinecone remote memory is closed; open a new one." });
  }

  // --- writes ---------------------------------------------------------------------------------

  /**
   * Validate an item and put it in the outbox (fsynced) before returning its id; it is sent to
   * Pinecone in the background, and `flush()` waits until Pinecone acknowledged it. Throws
   * `INVALID_ARGUMENT` for bad input (nothing is queued), `STORAGE_FAILED` when the outbox cannot
   * be written (nothing is queued).
   */
  remember(item: MemoryItem, options: RememberOptions = {}): string {
    this.assertOpen();
    const write = this.prepare(item, options, Date.now());
    this.enqueue([write]);
    return write.id;
  }

  /** A validated write of `item` created at `created` (throws `INVALID_ARGUMENT`). */
  private prepare(item: MemoryItem, options: RememberOptions, created: number): { id: string; text: string; metadata: VectorMetadata } {
    const { content: text, kind, sessionId, userId, tags, metadata: userMetadata, expiresAt: expiry } = parseMemoryItem(item);
    if (options.key !== undefined && !KEY_PATTERN.test(options.key))
      invalid(`key must be 1–128 letters, digits, _ or -; got ${JSON.stringify(String(options.key).slice(0, 40))}.`);
    const metadata = buildMetadata({
      text,
      kind,
      created,
      expires: expiry ?? NO_EXPIRY,
      seq: nextSeq(created),
      ...(sessionId !== undefined ? { sessionId } : {}),
      ...(userId !== undefined ? { userId } : {}),
      tags: [...new Set(tags)],
      userMetadata: checkMetadataFields(userMetadata),
    });
    const id = `${itemIdPrefix(userId, sessionId)}${kind}.${options.key ?? randomUUID()}`;
    return { id, text, metadata };
  }

  /** `prepare` for an imported item: a refusal names the item, so the import can be repaired and re-run. */
  private prepareImported(
    oldId: string,
    item: MemoryItem,
    options: RememberOptions,
    created: number,
  ): { id: string; text: string; metadata: VectorMetadata } {
    try {
      return this.prepare(item, options, created);
    } catch (error) {
      if (!(error instanceof HermesMemoryError)) throw error;
      throw new HermesMemoryError({
        code: error.code,
        message: `Importing item ${oldId} into the Pinecone remote layout: ${error.message} Items before it are stored; importing again after fixing it stores each item once.`,
        cause: error,
      });
    }
  }

  /**
   * Move items of the sidecar layout (`exportItems` / `hermes-memory vector export` rows: id,
   * content and flat metadata with `kind`, `created_at`, `session_id`, `user_id`, `tags`, the
   * caller's metadata as JSON in `extra`, and an expiry in `expires_at` when there is one) into
   * this layout, keeping kind, creation time, session, user, tags and expiry; the other sidecar
   * fields (`source`, `role`, `digest`…) join the caller's metadata, as the sidecar layout returns
   * them. The old id becomes the key of the new one, so importing twice stores each item once.
   * Waits until Pinecone stored everything (`flush`). Returns the old id → new id of each item.
   */
  async importSidecarItems(items: Iterable<ExportedItem> | AsyncIterable<ExportedItem>): Promise<Map<string, string>> {
    this.assertOpen();
    const ids = new Map<string, string>();
    const batch: Array<{ id: string; text: string; metadata: VectorMetadata }> = [];
    for await (const row of items) {
      const {
        kind,
        created_at,
        session_id,
        user_id,
        tags,
        extra,
        expires_at,
        text: _text,
        text_truncated: _cut,
        created_ms: _ms,
        seq: _seq,
        ...others
      } = row.metadata;
      const rest = Object.fromEntries(Object.entries(others).filter(([k]) => !k.startsWith(PINECONE_USER_FIELD_PREFIX)));
      let user: Record<string, unknown> = {};
      if (typeof extra === "string") {
        try {
          user = JSON.parse(extra) as Record<string, unknown>;
        } catch {
          user = { extra };
        }
      }
      const created = typeof created_at === "string" && Number.isFinite(Date.parse(created_at)) ? Date.parse(created_at) : Date.now();
      const key = KEY_PATTERN.test(row.id) ? row.id : createHash("sha256").update(row.id).digest("hex").slice(0, 32);
      const write = this.prepareImported(
        row.id,
        {
          content: row.content,
          kind: MEMORY_ITEM_KINDS.includes(kind as MemoryKind) ? (kind as MemoryKind) : "fact",
          ...(typeof session_id === "string" && session_id !== "" ? { sessionId: session_id } : {}),
          ...(typeof user_id === "string" && user_id !== "" ? { userId: user_id } : {}),
          ...(Array.isArray(tags) ? { tags } : {}),
          ...(typeof expires_at === "string" || typeof expires_at === "number" ? { expiresAt: expires_at } : {}),
          metadata: { ...rest, ...user },
        },
        { key },
        created,
      );
      ids.set(row.id, write.id);
      batch.push(write);
      if (batch.length >= 256) {
        this.enqueue(batch.splice(0));
        await this.drain();
      }
    }
    this.enqueue(batch);
    await this.drain();
    return ids;
  }

  private enqueue(writes: Array<{ id: string; text: string; metadata: VectorMetadata }>): void {
    if (writes.length === 0) return;
    try {
      this.outbox.put(writes.map((w) => ({ ...w, namespace: this.namespace })));
    } catch (error) {
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message: `Could not write the Pinecone outbox ${this.outbox.file} (${describeError(error)}); nothing was saved. Check free space and write permission on $HERMES_HOME.`,
        cause: error,
      });
    }
    this.kick();
  }

  /** Start sending the outbox in the background (failures are kept for `flush()` to report). */
  private kick(): void {
    this.send().catch(() => undefined);
  }

  /** Send the outbox, oldest first, until it is empty or a batch fails (which stays queued). One sender at a time. */
  private send(): Promise<void> {
    if (this.sending) return this.sending;
    const run = async (): Promise<void> => {
      try {
        while (!this.closed) {
          const entries = this.outbox.list(this.batchSize);
          if (entries.length === 0) return;
          await this.checkIdentity();
          // Each entry goes to the namespace it was written for (a store reopened with another
          // namespace still delivers what the old one queued to where it belongs).
          const byNamespace = new Map<string, typeof entries>();
          for (const e of entries) byNamespace.set(e.namespace, [...(byNamespace.get(e.namespace) ?? []), e]);
          // A write refused for its content is set aside (once another went through), so it does
          // not hold up the writes behind it; `flush()` reports it.
          for (const [namespace, group] of byNamespace) {
            const { delivered } = await deliverIsolating(
              this.outbox,
              group,
              async (part) => {
                const records = await this.toRecords(part);
                await this.client.upsert(namespace, records);
                if (namespace === this.namespace) for (const record of records) this.cache(record.id, record);
              },
              { storeAccepted: this.storeAccepted },
            );
            if (delivered.length > 0) this.storeAccepted = true;
          }
          this.lastFailure = null;
        }
      } catch (error) {
        this.lastFailure = error;
        throw error;
      }
    };
    // Cleared in a later microtask, after `sending` is set, even when the outbox was empty.
    const sending: Promise<void> = run().finally(() => {
      if (this.sending === sending) this.sending = null;
    });
    this.sending = sending;
    return sending;
  }

  private async toRecords(entries: Array<{ id: string; text: string; metadata: VectorMetadata }>): Promise<RemoteRecord[]> {
    const vectors = await this.embedder.embed(entries.map((e) => e.text));
    return entries.map((e, i) => ({
      id: e.id,
      values: Array.from(l2Normalize(Float32Array.from(vectors[i]!))),
      sparseValues: encodeDocument(e.text),
      metadata: e.metadata,
    }));
  }

  /**
   * Resolve once everything remembered so far is stored in Pinecone (the outbox is empty). Rejects
   * with `STORAGE_FAILED`, naming how many writes wait in the outbox and the last failure, while
   * Pinecone does not acknowledge them; they stay queued and are re-sent by the next `flush()` or
   * `open`. Also rejects while writes Pinecone refused for their content are set aside
   * (`refusedWritesError`): they are accepted writes that are not stored.
   */
  async flush(): Promise<void> {
    await this.drain();
    const refused = refusedWritesError(this.outbox);
    if (refused) throw refused;
  }

  /**
   * `flush()` without the report of set-aside writes: what erasure, update, purge and import wait
   * for (a write set aside earlier must not stop them).
   */
  async drain(): Promise<void> {
    this.assertOpen();
    while (this.sending) await this.sending.catch(() => undefined);
    if (this.outbox.count() === 0) return;
    try {
      await this.send();
    } catch {
      // Reported below with the count.
    }
    const waiting = this.outbox.count();
    if (waiting > 0) {
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message: `${waiting} writes are not acknowledged by Pinecone yet; they are kept in the outbox ${this.outbox.file} and re-sent by the next flush() or open. Last failure: ${this.lastFailure ? describeError(this.lastFailure) : "none recorded"}`,
        ...(this.lastFailure ? { cause: this.lastFailure } : {}),
      });
    }
  }

  // --- read-your-writes cache -----------------------------------------------------------------

  private cache(id: string, record: RemoteRecord | null): void {
    this.recent.delete(id);
    this.recent.set(id, { record, at: Date.now() });
    if (this.recent.size > CACHE_LIMIT) this.recent.delete(this.recent.keys().next().value as string);
  }

  private cached(): Map<string, CachedItem> {
    const cutoff = Date.now() - this.rywMs;
    for (const [id, entry] of this.recent) {
      if (entry.at >= cutoff) break; // insertion order = time order
      this.recent.delete(id);
    }
    return this.recent;
  }

  // --- reads ----------------------------------------------------------------------------------

  /**
   * The best `limit` (default 10, at most 200) items passing the filter for `query`, by one hybrid
   * query: score = alpha·(dense·dense) + (1 − alpha)·(sparse·sparse). Expired items are never
   * returned. Throws `INVALID_ARGUMENT` for a malformed filter, `STORAGE_FAILED` when Pinecone
   * cannot be reached.
   */
  async search(query: string, options: MemorySearchOptions & { budgetMs?: number } = {}): Promise<MemoryHit[]> {
    this.assertOpen();
    const filter = parseMemoryFilter(options, { what: "search options", ignore: ["limit", "budgetMs"] });
    const limit = parseSearchLimit(options.limit, { max: MAX_LIMIT });
    if (typeof query !== "string" || query.trim() === "") return [];
    await this.checkIdentity(options.budgetMs);
    const [dense] = await this.embedder.embed([clipQuery(query)]);
    const unit = l2Normalize(Float32Array.from(dense!));
    const sparse = encodeQuery(query);
    const q = hybridQuery(unit, sparse, this.alpha);
    const now = Date.now();
    const matches = await this.client.query(this.namespace, { ...q, topK: limit, filter: toPineconeFilter(filter, now) }, options.budgetMs);
    const recent = this.cached();
    const hits = new Map<string, MemoryHit>();
    for (const m of matches) {
      if (recent.has(m.id)) continue; // the cached version is newer, or deleted
      hits.set(m.id, toHit(viewOf(m.id, m.metadata), m.score));
    }
    // Items this process wrote a moment ago that Pinecone's query index may not show yet, scored
    // as Pinecone scores them.
    const fromCache = new Map<string, MemoryHit>();
    for (const [id, entry] of recent) {
      if (!entry.record) continue;
      const view = viewOf(id, entry.record.metadata);
      if (view.expires <= now || !passes(filter, view)) continue;
      let dense = 0;
      entry.record.values.forEach((v, i) => (dense += v * q.vector[i]!));
      const score = dense + (entry.record.sparseValues ? sparseDot(q.sparseVector, entry.record.sparseValues) : 0);
      fromCache.set(id, toHit(view, score));
    }
    const ranked = (): MemoryHit[] =>
      [...hits.values(), ...fromCache.values()].sort((a, b) => b.score - a.score || a.id.localeCompare(b.id)).slice(0, limit);
    // Another machine may have deleted or changed a cached item since: the ones that would be
    // returned are read back by id, and only what Pinecone still holds is kept.
    const unconfirmed = ranked().flatMap((h) => (fromCache.has(h.id) ? [h.id] : []));
    if (unconfirmed.length > 0) {
      const stored = await this.client.fetch(this.namespace, unconfirmed, options.budgetMs);
      for (const id of unconfirmed) {
        const record = stored.get(id);
        const hit = fromCache.get(id)!;
        fromCache.delete(id);
        if (!record) continue;
        const view = viewOf(id, record.metadata);
        if (view.expires > now && passes(filter, view)) hits.set(id, toHit(view, hit.score));
      }
      for (const id of fromCache.keys()) if (!unconfirmed.includes(id)) fromCache.delete(id);
    }
    return ranked();
  }

  /** The stored record of `id`, read from Pinecone (by id, which does not wait for the query index); null when this process deleted it a moment ago. */
  private async record(id: string): Promise<RemoteRecord | null> {
    if (this.cached().get(id)?.record === null) return null;
    await this.checkIdentity();
    return (await this.client.fetch(this.namespace, [id])).get(id) ?? null;
  }

  /** One item by id (score 1), or null when there is none or it has expired. */
  async get(id: string): Promise<MemoryHit | null> {
    this.assertOpen();
    checkText(id, "id");
    const record = await this.record(id);
    if (!record) return null;
    const view = viewOf(id, record.metadata);
    return view.expires <= Date.now() ? null : toHit(view, 1);
  }

  // --- erasure and update ---------------------------------------------------------------------

  /** Delete one item (after storing queued writes, so none brings it back). False when no item has `id`. */
  async forget(id: string): Promise<boolean> {
    this.assertOpen();
    checkText(id, "id");
    await this.drain();
    // A set-aside (refused) copy goes too: a later `refused --retry` must not bring it back.
    const setAside = this.outbox.dropRefusedWhere((e) => e.namespace === this.namespace && e.id === id);
    if (!(await this.record(id))) return setAside.length > 0;
    const doomed = [id, ...(await this.checkpointCopyIds([id]))];
    await this.client.deleteIds(this.namespace, doomed);
    for (const gone of doomed) this.cache(gone, null);
    return true;
  }

  /**
   * Ids of the checkpoint items archiving a message of one of the turns with these ids (same user
   * and session; the texts the kit's `checkpointCopies` gives), so erasing a turn erases them too.
   */
  private async checkpointCopyIds(ids: readonly string[]): Promise<string[]> {
    const turns = [...new Set(ids)].filter((id) => kindOfId(id) === "turn");
    if (turns.length === 0) return [];
    const records = await this.client.fetch(this.namespace, turns);
    const texts = new Map<string, Set<string>>();
    for (const id of turns) {
      const record = records.get(id);
      if (!record) continue;
      const view = viewOf(id, record.metadata);
      if (view.sessionId === undefined) continue;
      const prefix = `${itemIdPrefix(view.userId, view.sessionId)}checkpoint.`;
      let set = texts.get(prefix);
      if (!set) texts.set(prefix, (set = new Set()));
      for (const text of checkpointCopies(view.text)) set.add(text);
    }
    const out: string[] = [];
    for (const [prefix, wanted] of texts) {
      for await (const page of this.client.listIds(this.namespace, prefix)) {
        const copies = await this.client.fetch(this.namespace, page);
        for (const [id, record] of copies) if (wanted.has(viewOf(id, record.metadata).text)) out.push(id);
      }
    }
    return out;
  }

  /** How many stored items (expired ones included) `forgetWhere(scope)` would erase now, after storing queued writes. */
  async countWhere(scope: ForgetScope): Promise<number> {
    this.assertOpen();
    return (await this.selectWhere(parseForgetScope(scope, "erasure scope").filter)).length;
  }

  /** The ids of the stored items passing `filter`, after storing queued writes (see `forgetWhere`). */
  private async selectWhere(filter: ParsedMemoryFilter): Promise<string[]> {
    await this.drain();
    await this.checkIdentity();
    const onlyPrefix = Object.keys(filter).every((k) => k === "userId" || k === "sessionId") && filter.userId !== undefined;
    const doomed: string[] = [];
    const check = async (ids: string[]): Promise<void> => {
      if (onlyPrefix) {
        doomed.push(...ids);
        return;
      }
      const records = await this.client.fetch(this.namespace, ids);
      const recent = this.cached();
      for (const id of ids) {
        const record = recent.get(id)?.record === null ? undefined : records.get(id);
        if (record && passes(filter, viewOf(id, record.metadata))) doomed.push(id);
      }
    };
    if (filter.ids) await check([...filter.ids]);
    else {
      const prefix = filter.userId !== undefined ? itemIdPrefix(filter.userId, filter.sessionId ?? null) : "";
      for await (const ids of this.client.listIds(this.namespace, prefix)) await check(ids);
    }
    return doomed;
  }

  /**
   * Erase every item in `scope` (expired ones included) and return how many were erased, after
   * storing queued writes. Items are found by id prefix when the scope names a user (and session),
   * else by listing the namespace; their metadata is fetched and checked against the rest of the
   * scope only when it has other conditions. Throws `INVALID_ARGUMENT` for a malformed or empty
   * scope, and for a scope without ids that would erase every item of the namespace unless
   * `confirmAll` is true.
   */
  async forgetWhere(input: ForgetScope): Promise<number> {
    this.assertOpen();
    const scope = parseForgetScope(input, "erasure scope");
    const selected = await this.selectWhere(scope.filter);
    // Erased turns take the checkpoint copies of their messages with them.
    const doomed = [...new Set([...selected, ...(await this.checkpointCopyIds(selected))])];
    await this.refuseWholeNamespace(scope, doomed);
    await this.client.deleteIds(this.namespace, doomed);
    for (const id of doomed) this.cache(id, null);
    // Set-aside (refused) writes in the scope go too: a later `refused --retry` must not bring them back.
    const setAside = this.outbox.dropRefusedWhere(
      (e) => e.namespace === this.namespace && !doomed.includes(e.id) && passes(scope.filter, viewOf(e.id, e.metadata)),
    );
    return doomed.length + setAside.length;
  }

  /**
   * Refuse (`checkWholeStoreErasure`) an erasure of `doomed` that would leave the namespace empty.
   * Pinecone has no transactions, so the namespace is listed once more after the selection (and
   * this process's recent writes, which a listing may not show yet, are looked at): the first item
   * that is not to be erased lets the erasure go on, and usually ends the listing on its first
   * page. An item written by another machine meanwhile can only turn a refusal into an erasure
   * that leaves it; only items the selection found are ever deleted.
   */
  private async refuseWholeNamespace(scope: ParsedForgetScope, doomed: readonly string[]): Promise<void> {
    if (scope.confirmAll || scope.filter.ids !== undefined || doomed.length === 0) return;
    const gone = new Set(doomed);
    const recent = this.cached();
    for (const [id, entry] of recent) if (entry.record !== null && !gone.has(id)) return;
    for await (const page of this.client.listIds(this.namespace, "")) {
      if (page.some((id) => !gone.has(id) && recent.get(id)?.record !== null)) return;
    }
    checkWholeStoreErasure(scope, doomed.length, doomed.length);
  }

  /**
   * Change an item and re-index it (new text: new dense and sparse vectors). `metadata`, when
   * given, replaces the caller's metadata as a whole; `expiresAt: null` removes the expiry. The
   * change goes through the outbox and is sent before this resolves; when Pinecone fails it throws
   * `STORAGE_FAILED` and the change stays queued. False when no item has `id`.
   */
  async update(id: string, changes: MemoryUpdate): Promise<boolean> {
    this.assertOpen();
    checkText(id, "id");
    const parsed = parseMemoryUpdate(changes);
    await this.drain();
    const record = await this.record(id);
    if (!record) return false;
    const view = viewOf(id, record.metadata);
    const text = parsed.content ?? view.text;
    const expires = parsed.expiresAt === null ? NO_EXPIRY : (parsed.expiresAt ?? view.expires);
    const metadata = buildMetadata({
      text,
      kind: view.kind,
      created: view.created,
      expires,
      seq: typeof record.metadata.seq === "number" ? record.metadata.seq : nextSeq(view.created),
      ...(view.sessionId !== undefined ? { sessionId: view.sessionId } : {}),
      ...(view.userId !== undefined ? { userId: view.userId } : {}),
      tags: parsed.tags ?? view.tags,
      userMetadata: parsed.metadata !== undefined ? checkMetadataFields(parsed.metadata) : view.userMetadata,
    });
    this.enqueue([{ id, text, metadata }]);
    await this.drain();
    // This change was refused for its content (set aside): the caller must know it is not stored.
    const refused = this.outbox.refused().find((e) => e.namespace === this.namespace && e.id === id);
    if (refused) {
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message: `The change to item ${JSON.stringify(id.slice(0, 80))} was refused for its content (${refused.reason.slice(0, 300)}); the item is unchanged in Pinecone and the change is set aside (see \`hermes-memory vector refused\`).`,
      });
    }
    return true;
  }

  /**
   * Delete the items whose expiry has passed and return how many. Found with filtered queries
   * (Pinecone evaluates `expires <= now`), 1000 at a time, until a query brings no new id; items
   * Pinecone's index has not caught up with are left for the next purge (search never returns
   * them: it filters on expiry).
   */
  async purgeExpired(): Promise<number> {
    this.assertOpen();
    await this.drain();
    await this.checkIdentity();
    const now = Date.now();
    const probe = new Array<number>(this.embedder.dimensions).fill(0);
    probe[0] = 1;
    const seen = new Set<string>();
    for (;;) {
      const matches = await this.client.query(this.namespace, { vector: probe, topK: 1000, filter: expiredPineconeFilter(now) });
      const fresh = matches.map((m) => m.id).filter((id) => !seen.has(id));
      if (fresh.length === 0) break;
      await this.client.deleteIds(this.namespace, fresh);
      for (const id of fresh) {
        seen.add(id);
        this.cache(id, null);
      }
    }
    return seen.size;
  }

  // --- stats and lifecycle --------------------------------------------------------------------

  /**
   * Item counts by kind and sessions, read from the ids (`list`, 100 ids per request, so this
   * costs one request per 100 items), plus where the data lives and the writes still queued.
   */
  async stats(): Promise<MemoryStats> {
    this.assertOpen();
    await this.checkIdentity();
    const byKind: Record<MemoryKind, number> = { turn: 0, fact: 0, checkpoint: 0 };
    const sessions = new Set<string>();
    let items = 0;
    for await (const ids of this.client.listIds(this.namespace, "")) {
      for (const id of ids) {
        const kind = kindOfId(id);
        if (!kind) continue;
        items++;
        byKind[kind]++;
        const [user, session] = id.split(".");
        if (session !== "s-") sessions.add(`${user}.${session}`);
      }
    }
    return {
      items,
      byKind,
      sessions: sessions.size,
      location: `pinecone:${this.indexName}/${this.namespace}`,
      layout: "remote",
      embedder: this.embedder.id,
      sparseEncoder: SPARSE_ENCODER_ID,
      alpha: this.alpha,
      pendingWrites: this.outbox.count(),
      refusedWrites: this.outbox.refusedCount(),
    };
  }

  /**
   * Try once more to send the outbox, then close it. Idempotent. Writes Pinecone did not
   * acknowledge stay in the outbox file for the next `open` (nothing is lost); the returned count
   * says how many.
   */
  /**
   * `STORAGE_FAILED` naming the writes set aside because Pinecone or the embedder refused their
   * content (see `refusedWritesError`), `null` when there are none; after `close()`, as it was then.
   */
  refusedWrites(): HermesMemoryError | null {
    return this.closed ? this.refusedAtClose : refusedWritesError(this.outbox);
  }

  async close(): Promise<number> {
    if (this.closed) return 0;
    try {
      if (!this.inspectOnly) await this.flush();
    } catch {
      // Kept in the outbox; reported by the count.
    }
    this.closed = true;
    while (this.sending) await this.sending.catch(() => undefined);
    const left = this.outbox.count();
    this.refusedAtClose = refusedWritesError(this.outbox);
    this.outbox.close();
    this.recent.clear();
    return left;
  }
}

/** Throws `INVALID_ARGUMENT` for a bad `alpha` or namespace. */
function checkRemoteOptions(options: PineconeRemoteMemoryOptions): void {
  if (options.alpha !== undefined && !(typeof options.alpha === "number" && options.alpha >= 0 && options.alpha <= 1)) {
    invalid(`alpha must be a number from 0 (keywords only) to 1 (meaning only); got ${String(options.alpha)}.`);
  }
  if (typeof options.namespace !== "string") invalid('namespace must be text ("" is Pinecone\'s default namespace).');
}
