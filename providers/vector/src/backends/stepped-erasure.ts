/**
 * Erasing sidecar rows in steps: the rows are handed to the store (`VectorStore.eraseRows`: vectors,
 * sidecar rows, FTS entries, the refilled context of later turns) a few at a time, sized by measured
 * time (the kit's `StepPacer`), with the event loop served between steps. A step takes the
 * checkpoint copies of its turns' messages with it, so a process stopped between steps leaves no
 * erased turn whose copies are still stored, and running the erasure again erases the rest.
 */
import { StepPacer, yieldToEventLoop } from "@hermes/memory-provider-kit";
import type { Sidecar } from "../local/sidecar.js";
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
