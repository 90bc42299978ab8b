/**
 * The vector provider's maintenance jobs, which the CLI runs: re-embedding every item (reindex),
 * JSON Lines export and import of the sidecar's items, and the move of a sidecar layout's items to
 * the remote layout.
 */
import { HermesMemoryError } from "@hermes/memory-core";
import { parseItemMetadata, StepPacer, yieldToEventLoop } from "@hermes/memory-provider-kit";
import type { Embedder } from "../embedders/embedder.js";
import { SPARSE_ENCODER_ID } from "../embedders/sparse-encoder.js";
import { namespaceUserReader } from "../local/user-namespaces.js";
import type { VectorMetadata } from "../metadata-filter.js";
import { flattenMetadata } from "../pinecone/pinecone-vector-store.js";
import { isolateRefused } from "../retry-policy.js";
import type { PineconeRemoteMemory } from "../pinecone/pinecone-remote-store.js";
import type { Sidecar } from "../local/sidecar.js";
import type { SidecarRow } from "../local/sidecar-rows.js";
import type { VectorConfig } from "../vector-config.js";
import { invalidArgument } from "./backend.js";
import { openRemoteMemory } from "./remote-backend.js";
import type { VectorStore } from "./vector-store.js";

/** One item as exported by `exportItems` and accepted by `importItems` (JSON Lines). */
export interface ExportedItem {
  id: string;
  namespace: string;
  content: string;
  metadata: VectorMetadata;
}

/** Progress callback of long operations: `done` of `total` items. */
export type ProgressCallback = (done: number, total: number) => void;

/** An accepted write on its way to the store. */
export interface PendingWrite {
  /** Outbox row holding this write durably (Pinecone store), once it is there. */
  seq?: number;
  id: string;
  namespace: string;
  text: string;
  metadata: VectorMetadata;
}

/** Items embedded per batch by reindex and import. */
const BATCH = 64;

/**
 * Re-embed every sidecar item with `embedder` into `store` (the store decides what a reindex
 * replaces first), then `recordIdentity()` and flush the store. Text comes from the sidecar, so
 * nothing is lost. First, values an older version or another program stored unreadably (BLOBs,
 * non-JSON metadata) are made readable (`Sidecar.repairUnreadableValues`: no item is dropped, the
 * originals are kept in the item's metadata), so the items are indexed and stored as they now read.
 * An item whose text is refused for its content (by the embedder or the store) is found by
 * `isolateRefused` and left without a vector (keyword search still finds it) instead of failing
 * the reindex, once another item was indexed; while none was, the refusal is thrown (a
 * misconfigured embedder refuses every text). Returns the number of items indexed, of namespaces,
 * and of items left without a vector (`unembedded`).
 */
export async function reindexAll(
  parts: { sidecar: Sidecar; store: VectorStore; embedder: Embedder },
  recordIdentity: () => void,
  onProgress?: ProgressCallback,
): Promise<{ items: number; namespaces: number; unembedded: number }> {
  const { sidecar, store, embedder } = parts;
  sidecar.repairUnreadableValues();
  const counts = sidecar.namespaceCounts();
  const total = Object.values(counts).reduce((a, b) => a + b, 0);
  let done = 0;
  let indexed = 0;
  let unembedded = 0;
  onProgress?.(0, total);
  store.beginReindex(sidecar);
  for (const namespace of Object.keys(counts)) {
    let batch: SidecarRow[] = [];
    const flushBatch = async (): Promise<void> => {
      if (batch.length === 0) return;
      const send = async (rows: SidecarRow[]): Promise<void> =>
        store.reindexRows(rows, await embedder.embed(rows.map((r) => r.text)), namespace);
      const { delivered, refused } = await isolateRefused(batch, send, { accepted: indexed > 0 });
      indexed += delivered.length;
      unembedded += refused.length;
      done += batch.length;
      onProgress?.(done, total);
      batch = [];
    };
    for (const row of sidecar.iterate(namespace)) {
      batch.push(row);
      if (batch.length >= BATCH) await flushBatch();
    }
    await flushBatch();
  }
  recordIdentity();
  await store.flush();
  return { items: indexed, namespaces: Object.keys(counts).length, unembedded };
}

/**
 * Store every sidecar item in the remote layout's `remote`, 256 at a time, each batch acknowledged
 * by Pinecone before the next is read (so progress counts stored items). An item without a user
 * gets the user its namespace stands for (`userOf`). Returns the number of items stored.
 */
export async function copyToRemote(
  sidecar: Sidecar,
  remote: PineconeRemoteMemory,
  userOf: (namespace: string) => string | null,
  onProgress?: ProgressCallback,
): Promise<number> {
  const total = Object.values(sidecar.namespaceCounts()).reduce((a, b) => a + b, 0);
  let done = 0;
  onProgress?.(0, total);
  const batch: ExportedItem[] = [];
  const send = async (): Promise<void> => {
    if (batch.length === 0) return;
    const n = batch.length;
    await remote.importSidecarItems(batch.splice(0));
    done += n;
    onProgress?.(done, total);
  };
  for (const item of exportAll(sidecar)) {
    const user = typeof item.metadata.user_id === "string" && item.metadata.user_id !== "" ? null : userOf(item.namespace);
    batch.push(user === null ? item : { ...item, metadata: { ...item.metadata, user_id: user } });
    if (batch.length >= 256) await send();
  }
  await send();
  return done;
}

/** Every sidecar item as an `ExportedItem`. */
export function* exportAll(sidecar: Sidecar): Generator<ExportedItem> {
  for (const row of sidecar.iterate(null)) {
    const { text: _t, ...metadata } = row.metadata;
    yield { id: row.id, namespace: row.namespace, content: row.text, metadata };
  }
}

/**
 * Refuse (INVALID_ARGUMENT) an import line that is not an exported item, or whose caller metadata
 * (JSON text in `extra`, which becomes a filter column read by SQLite's JSON functions) is nested
 * too deep for them: SQLite refuses documents nested 1000 levels deep, and every metadata filter
 * over the store would then fail.
 */
function checkImported(item: ExportedItem, line: number): void {
  if (
    typeof item?.id !== "string" ||
    typeof item.content !== "string" ||
    (item.metadata != null && (typeof item.metadata !== "object" || Array.isArray(item.metadata)))
  ) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `Import line ${line} is not an exported item ({id, namespace, content, metadata}). Use a file written by \`hermes-memory vector export\`.`,
    });
  }
  const extra = item.metadata?.extra;
  if (typeof extra !== "string") return;
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(extra);
  } catch {
    return; // not JSON: kept as the text it is
  }
  if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) parseItemMetadata(parsed, `Import line ${line}`);
}

/**
 * Import exported items in batches (at most `BATCH`, sized by measured time, the event loop served between them) through `sink.write` (ids kept, namespaces from
 * `sink.namespaceFor(userId)`). Throws `INVALID_ARGUMENT` at the first item that is not an export
 * record. Returns the number imported.
 */
export async function importAll(
  items: Iterable<ExportedItem> | AsyncIterable<ExportedItem>,
  sink: { namespaceFor(userId: string | undefined): string; write(batch: PendingWrite[]): Promise<void> },
  onProgress?: ProgressCallback,
  total = 0,
): Promise<number> {
  let batch: PendingWrite[] = [];
  let done = 0;
  // Batches are sized by measured time, with the event loop served between them: embedding and
  // indexing a batch runs on the host's thread.
  const pacer = new StepPacer({ initial: 8, max: BATCH });
  let started = performance.now();
  const flushBatch = async (): Promise<void> => {
    if (batch.length === 0) return;
    await sink.write(batch);
    done += batch.length;
    onProgress?.(done, Math.max(total, done));
    pacer.record(batch.length, performance.now() - started);
    batch = [];
    await yieldToEventLoop();
    started = performance.now();
  };
  for await (const item of items) {
    const line = done + batch.length + 1;
    try {
      checkImported(item, line);
    } catch (error) {
      // The items before the refused line are stored, so importing again after fixing it completes the file.
      await flushBatch();
      throw error;
    }
    const userId = typeof item.metadata?.user_id === "string" ? item.metadata.user_id : undefined;
    batch.push({ id: item.id, namespace: sink.namespaceFor(userId), text: item.content, metadata: flattenMetadata(item.metadata ?? {}) });
    if (batch.length >= pacer.size) await flushBatch();
  }
  await flushBatch();
  return done;
}

/** Refuse (INVALID_ARGUMENT) a move to the remote layout without a Pinecone store or without the namespace every machine shares. */
export function checkRemoteMigration(config: VectorConfig, namespace: string): void {
  if (config.store !== "pinecone") {
    throw invalidArgument(
      "reindex --to remote needs memory.vector.store: pinecone (and the Pinecone index settings); the local store has no remote layout.",
    );
  }
  if (typeof namespace !== "string" || namespace === "") {
    throw invalidArgument(
      "reindex --to remote needs the namespace every machine will share: set memory.vector.pinecone_namespace or pass --profile <name>.",
    );
  }
}

/**
 * Copy the sidecar's items into `target.namespace` of the configured Pinecone index (writes Pinecone
 * has not acknowledged wait in `target.outboxFile`), then record in the sidecar that this home uses
 * the remote layout and which embedder and sparse encoder built it.
 */
export async function migrateToRemoteLayout(
  sidecar: Sidecar,
  config: VectorConfig,
  embedder: Embedder,
  target: { namespace: string; outboxFile: string; inspecting: boolean; profile: string },
  onProgress?: ProgressCallback,
): Promise<{ items: number; namespace: string }> {
  const { namespace } = target;
  const remote = await openRemoteMemory(config, embedder, namespace, target.outboxFile, target.inspecting);
  try {
    const items = await copyToRemote(
      sidecar,
      remote,
      namespaceUserReader(sidecar, config.pineconeNamespaceTemplate, target.profile),
      onProgress,
    );
    sidecar.setMeta("pinecone_layout", "remote");
    sidecar.setMeta(
      `index:pinecone-remote:${config.pineconeIndex}/${namespace}`,
      `${embedder.id}/${embedder.dimensions}/${SPARSE_ENCODER_ID}`,
    );
    return { items, namespace };
  } finally {
    await remote.close();
  }
}
