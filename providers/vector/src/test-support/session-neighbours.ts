import type { Sidecar } from "../local/sidecar.js";
import type { SidecarRow } from "../local/sidecar-rows.js";

/**
 * Reference lookup for tests: the turns around the row `key` in the same namespace and session, in
 * insertion order (up to `after` following and `before` preceding rows of kind `turn`), read with
 * plain SQL, independently of the batched look-ups the provider uses.
 */
export function sessionNeighbours(
  sidecar: Sidecar,
  namespace: string,
  sessionId: string,
  key: number,
  after: number,
  before: number,
): { next: SidecarRow[]; previous: SidecarRow[] } {
  const where = `namespace = ? AND json_extract(metadata, '$.session_id') = ? AND json_extract(metadata, '$.kind') = 'turn'`;
  const around = (direction: "next" | "previous", count: number): SidecarRow[] => {
    if (count <= 0) return [];
    const ids = sidecar.db
      .prepare(
        `SELECT id FROM records WHERE ${where} AND key ${direction === "next" ? ">" : "<"} ? ORDER BY key ${direction === "next" ? "ASC" : "DESC"} LIMIT ?`,
      )
      .pluck()
      .all(namespace, sessionId, key, count) as string[];
    const rows = new Map(sidecar.getByIds(namespace, ids).map((row) => [row.id, row]));
    return ids.map((id) => rows.get(id)!);
  };
  return { next: around("next", after), previous: around("previous", before) };
}
