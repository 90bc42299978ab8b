import { describe, expect, it } from "vitest";
import { until } from "@hermes/test-support";
import { BatchingWriter } from "./batching-writer.js";

describe("BatchingWriter", () => {
  it("returns from push at once and writes in batches in the background", async () => {
    const batches: number[][] = [];
    const w = new BatchingWriter<number>({ write: (b) => void batches.push([...b]), batchSize: () => 3 });
    for (let i = 0; i < 7; i++) w.push(i);
    expect(batches).toEqual([]);
    await until(() => batches.length >= 3);
    expect(batches).toEqual([[0, 1, 2], [3, 4, 5], [6]]);
    expect(w.length).toBe(0);
  });

  it("tells the write whether a transient failure will be retried on a timer (ticks, flush) or not (drain)", async () => {
    const calls: Array<[number[], boolean]> = [];
    let busyOnce = true;
    const w = new BatchingWriter<number>({
      write: (b, { retried }) => {
        calls.push([[...b], retried]);
        if (retried && busyOnce) {
          busyOnce = false;
          throw Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" });
        }
      },
      isTransient: (e) => (e as { code?: string }).code === "SQLITE_BUSY",
    });
    w.push(1);
    await until(() => calls.length >= 2);
    // The background tick failed as busy and was retried by a later tick.
    expect(calls).toEqual([
      [[1], true],
      [[1], true],
    ]);
    w.push(2);
    w.drain();
    w.push(3);
    await w.flush();
    // A read's quiet drain goes on without the items when they cannot be written now.
    w.push(4);
    w.drainQuietly(() => undefined);
    expect(calls.slice(2)).toEqual([
      [[2], false],
      [[3], true],
      [[4], true],
    ]);
  });

  it("keeps items when the write fails, retries with backoff, and flush throws flushError", async () => {
    let fail = true;
    const written: number[] = [];
    const events: string[] = [];
    const w = new BatchingWriter<number>({
      write: (b) => {
        if (fail) throw Object.assign(new Error("disk full"), { code: "SQLITE_FULL" });
        written.push(...b);
      },
      onBackgroundError: (e) => void events.push(e.kind),
      flushError: (queued) => new Error(`${queued} queued`),
    });
    w.push(1);
    w.push(2);
    await until(() => events.includes("retry"));
    await expect(w.flush()).rejects.toThrow("2 queued");
    fail = false;
    await w.flush();
    expect(written).toEqual([1, 2]);
    w.stop();
  });

  it("retries transient failures inside flush, and drops the oldest beyond maxQueue", async () => {
    let busy = 2;
    const written: number[] = [];
    const dropped: number[] = [];
    const w = new BatchingWriter<number>({
      write: (b) => {
        if (busy-- > 0) throw new Error("busy");
        written.push(...b);
      },
      isTransient: (e) => (e as Error).message === "busy",
      maxQueue: 2,
      flushIntervalMs: () => 10_000,
      onBackgroundError: (e) => void (e.kind === "dropped" && dropped.push(e.count)),
    });
    w.push(1);
    w.push(2);
    w.push(3);
    expect(dropped).toEqual([1]);
    await w.flush();
    expect(written).toEqual([2, 3]);
    w.stop();
  });

  it("does nothing while canWrite is false; drainQuietly reports instead of throwing", () => {
    let open = false;
    const w = new BatchingWriter<number>({
      write: () => {
        throw new Error("boom");
      },
      canWrite: () => open,
      flushIntervalMs: () => 10_000,
    });
    w.push(1);
    w.drain();
    expect(w.length).toBe(1);
    open = true;
    const seen: unknown[] = [];
    w.drainQuietly((e) => seen.push(e));
    expect(seen).toHaveLength(1);
    w.stop();
  });
});
