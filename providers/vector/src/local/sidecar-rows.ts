/**
 * What the vector sidecar's rows look like to its readers (rows, references, keyword ranks, row
 * conditions), and the conversions between stored values and those shapes.
 */
import { HermesMemoryError } from "@hermes/memory-core";
import type { ParsedMemoryFilter } from "@hermes/memory-provider-kit";
import { buildFtsQuery } from "@hermes/memory-provider-kit/sqlite";
import type { VectorMetadata } from "../metadata-filter.js";
import { readableRecord } from "./sidecar-values.js";

/** One sidecar row: the text and metadata of a record, plus its vector when the local store holds it. */
export interface SidecarRow {
  /** Integer key of the row; the ANN index uses it as its label. */
  key: number;
  namespace: string;
  id: string;
  text: string;
  metadata: VectorMetadata;
  vector: Float32Array | null;
}

/** A row to write. `metadata` excludes `text`, which has its own (full-text indexed) column. */
export interface SidecarWrite {
  id: string;
  text: string;
  metadata: VectorMetadata;
  vector: Float32Array | null;
}

/** A row's key, id and metadata, without text or vector: what ranking and context spreading read. */
export interface SidecarRef {
  key: number;
  id: string;
  metadata: VectorMetadata;
}

/**
 * The metadata of a row read as JSON text (`CAST(metadata AS TEXT)`), or `undefined` when it is not
 * a JSON object: the row is then read again whole, as `readableRecord` makes it readable.
 */
export function parseRefMetadata(text: string): VectorMetadata | undefined {
  try {
    const parsed = JSON.parse(text) as unknown;
    return parsed !== null && typeof parsed === "object" && !Array.isArray(parsed) ? (parsed as VectorMetadata) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A candidate's row with the keys of its conversational neighbours: the next two and the two previous
 * rows of kind `turn` in the same namespace and session (empty when not looked up).
 */
export interface LinkedRef extends SidecarRef {
  next: number[];
  previous: number[];
  /** Whether the row's text asks a question (the kit's `asksQuestion` rule); false when not linked. */
  asksQuestion: boolean;
  /** False when the metadata was not read (`metadataFirst`): `metadata` is then `{}`. */
  hasMetadata: boolean;
  /**
   * Whether the row is a turn with a session (kind `turn`, a string `session_id`): a turn that can
   * pass context on. Read for the first `linkFirst` ids (with or without their metadata); false for the rest.
   */
  sessionTurn: boolean;
}

/** A keyword (BM25) rank from the FTS5 index, without text; `score` is positive, higher is better. */
export interface KeywordRank {
  key: number;
  id: string;
  score: number;
}

/** A keyword (BM25) hit from the FTS5 index; `score` is positive, higher is better. */
export interface KeywordHit {
  key: number;
  id: string;
  score: number;
  text: string;
  metadata: VectorMetadata;
}

/** A row as stored: the text columns may hold a BLOB another program wrote (`readableRecord` reads it). */
export interface RawRow {
  key: number;
  namespace: unknown;
  id: unknown;
  text: unknown;
  metadata: unknown;
  vector: Buffer | null;
}

/** A condition over `records r`: SQL with `?` placeholders bound, in order, to `params`. */
export type SqlCondition = Pick<RowCondition, "sql" | "params">;

/** A compiled row condition over `records r` (SQL with `?` parameters), as `Sidecar.condition` builds it. */
export interface RowCondition {
  sql: string;
  params: unknown[];
  /** What it was compiled from, to compile it again over another alias of `records`. */
  filter: ParsedMemoryFilter;
  now: number | null;
}

/**
 * SQL for the keys of the two turns after (`next`) or before (`prev`) the row `r` in its namespace
 * and session, as the JSON array [smaller key, larger key] (the same key twice when there is one,
 * nulls when there is none; `neighbourKeys` reads it): one seek in the session index for both,
 * and no aggregate that depends on row order.
 */
function neighbourKeysSql(direction: "next" | "prev"): string {
  const order = direction === "next" ? "" : " DESC";
  return `json((SELECT json_array(min(k), max(k)) FROM (SELECT n.key AS k FROM records n
      WHERE n.namespace = r.namespace AND json_extract(n.metadata, '$.session_id') = json_extract(r.metadata, '$.session_id')
        AND json_extract(n.metadata, '$.kind') = 'turn' AND n.key ${direction === "next" ? ">" : "<"} r.key ORDER BY n.key${order} LIMIT 2)))`;
}

/** The keys of `neighbourKeysSql`'s [smaller, larger] pair, nearest first (`prev`: the larger key is nearer). */
export function neighbourKeys(pair: [number | null, number | null] | null, direction: "next" | "prev"): number[] {
  if (pair === null || pair[0] === null || pair[1] === null) return [];
  const [low, high] = pair;
  if (low === high) return [low];
  return direction === "next" ? [low, high] : [high, low];
}

/**
 * `Sidecar.linkedRefs`: per id of `@ids` (by id, or by key), key, id, metadata (first `@meta`),
 * neighbour keys, whether it asks a question and whether it is a turn with a session (first
 * `@link`), whether its values are stored as text, and its session when that is text (first `@link`).
 */
function linkedRefsSql(by: "r.id" | "r.key"): string {
  return `SELECT json_group_array(json_array(r.key, CAST(r.id AS TEXT), CASE WHEN c.key < @meta THEN CAST(r.metadata AS TEXT) END,
        CASE WHEN c.key < @link THEN ${neighbourKeysSql("next")} END,
        CASE WHEN c.key < @link THEN ${neighbourKeysSql("prev")} END,
        CASE WHEN c.key < @link THEN instr(r.text, '?') > 0 OR instr(r.text, '？') > 0 END,
        typeof(r.id) = 'text' AND typeof(r.text) = 'text' AND typeof(r.metadata) = 'text',
        CASE WHEN c.key < @link THEN json_extract(r.metadata, '$.kind') = 'turn' AND json_type(r.metadata, '$.session_id') = 'text' END,
        CASE WHEN c.key < @link AND json_type(r.metadata, '$.session_id') = 'text' THEN json_extract(r.metadata, '$.session_id') END))
      FROM json_each(@ids) c CROSS JOIN records r ON r.namespace = @namespace AND ${by} = c.value`;
}
export const LINKED_BY_ID_SQL = linkedRefsSql("r.id");
export const LINKED_BY_KEY_SQL = linkedRefsSql("r.key");

/**
 * Turn arbitrary user text into an FTS5 query that can never be a syntax error: stopwords
 * dropped, every remaining word quoted, the words OR-ed (see `buildFtsQuery`).
 */
export function toFtsQuery(text: string): string | null {
  return buildFtsQuery(text);
}

export function decodeVector(blob: Buffer | null): Float32Array | null {
  if (!blob) return null;
  // Copy: the Buffer may share a pooled ArrayBuffer and be unaligned for Float32 access.
  const copy = new Uint8Array(blob.byteLength);
  copy.set(blob);
  return new Float32Array(copy.buffer, 0, blob.byteLength / 4);
}

export function encodeVector(vector: Float32Array | null): Buffer | null {
  return vector ? Buffer.from(vector.buffer, vector.byteOffset, vector.byteLength) : null;
}

/** Whether `error` is SQLite refusing a value its JSON functions cannot read ("malformed JSON", "JSON cannot hold BLOB values"). */
export function isJsonError(error: unknown): boolean {
  return !HermesMemoryError.isInstance(error) && /\bJSON\b/.test(String((error as Error | null)?.message));
}

/** A stored row; values stored unreadably read as a repair would store them (`readableRecord`). */
export function toRow(raw: RawRow): SidecarRow {
  const { namespace, id, text, metadata } = readableRecord(raw);
  if (text) metadata.text = text;
  return { key: raw.key, namespace, id, text, metadata, vector: decodeVector(raw.vector) };
}
