/**
 * Erasing sidecar rows in steps: the rows are handed to the store (`VectorStore.eraseRows`: vectors,
 * sidecar rows, FTS entries, the refilled context of later turns) a few at a time, sized by measured
 * time (the kit's `StepPacer`), with the event loop served between steps. A step takes the
 * checkpoint copies of its turns' messages with it, so a process stopped between steps leaves no
 * erased turn whose copies are still stored, and running the erasure again erases the rest.
 *
 * The rows are selected the same way: a range of keys per step (`selectRowsInSteps`), each range's
 * rows in scope and all its rows read in one snapshot, so a filter that reads every row's metadata
 * never holds up the host for the whole store at once.
 */
import { StepPacer, yieldToEventLoop } from "@hermes/memory-provider-kit";
import type { Sidecar } from "../local/sidecar.js";
import type { SqlCondition } from "../local/sidecar-rows.js";
import type { VectorStore } from "./vector-store.js";

/** A sidecar row to erase. */
export type ErasedRow = { key: number; namespace: string; id: string };

/**
 * Erase `rows` (with `withCopies`, also the checkpoint copies of their turns, found at each step)
 * from `store` in steps. Returns every row erased, copies included, in the order erased.
 */
export async function eraseRowsInSteps(
  store: VectorStore,
  sidecar: Sidecar,
  rows: readonly ErasedRow[],
  withCopies: boolean,
): Promise<ErasedRow[]> {
  return store.holdingSaves
    ? store.holdingSaves(() => eraseSteps(store, sidecar, rows, withCopies))
    : eraseSteps(store, sidecar, rows, withCopies);
}

async function eraseSteps(store: VectorStore, sidecar: Sidecar, rows: readonly ErasedRow[], withCopies: boolean): Promise<ErasedRow[]> {
  const erased: ErasedRow[] = [];
  const done = new Set<number>();
  const pacer = new StepPacer({ initial: 8 });
  for (let at = 0; at < rows.length;) {
    const started = performance.now();
    const chunk = rows.slice(at, at + pacer.size).filter((r) => !done.has(r.key));
    const keys = new Set(chunk.map((r) => r.key));
    const copies = (withCopies ? sidecar.checkpointCopyRows([...keys]) : []).filter((r) => !keys.has(r.key) && !done.has(r.key));
    const step = [...chunk, ...copies];
    if (step.length > 0) await store.eraseRows(step, sidecar);
    for (const row of step) {
      done.add(row.key);
      erased.push(row);
    }
    const size = pacer.size;
    at += size;
    pacer.record(size, performance.now() - started);
    if (at < rows.length) await yieldToEventLoop();
  }
  return erased;
}

/**
 * The rows of `namespace` (every namespace when null) passing `condition`, read a range of keys
 * per step, and how many rows the store holds (`total`, counted in the same reads; rows written
 * since the scan began add one: they are kept, so the store is not emptied).
 */
export async function selectRowsInSteps(
  sidecar: Sidecar,
  namespace: string | null,
  condition: SqlCondition | null,
): Promise<{ rows: ErasedRow[]; total: number }> {
  const top = sidecar.maxKey();
  const rows: ErasedRow[] = [];
  let total = 0;
  const pacer = new StepPacer({ initial: 4096, max: 10_000_000 });
  for (let low = 0; low < top;) {
    pacer.timed((size) => {
      const high = Math.min(top, low + size);
      const range = { sql: "r.key > ? AND r.key <= ?", params: [low, high] };
      const inScope = condition ? { sql: `(${condition.sql}) AND ${range.sql}`, params: [...condition.params, ...range.params] } : range;
      sidecar.inOneRead(() => {
        for (const row of sidecar.rowsWhere(namespace, inScope)) rows.push(row);
        total += sidecar.rowsWhere(null, range).length;
      });
      const width = high - low;
      low = high;
      return width;
    });
    if (low < top) await yieldToEventLoop();
  }
  if (sidecar.maxKey() > top) total++;
  return { rows, total };
}
