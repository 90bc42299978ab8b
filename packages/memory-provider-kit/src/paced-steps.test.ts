import { describe, expect, it } from "vitest";
import { StepPacer, STEP_TARGET_MS, yieldToEventLoop } from "@hermes/memory-provider-kit";

describe("StepPacer", () => {
  it("sizes steps from the measured time per unit: grows at most twice per step, shrinks at once after an overrun", () => {
    const pacer = new StepPacer({ initial: 10 });
    expect(pacer.targetMs).toBe(STEP_TARGET_MS);
    // 10 units in 1 ms: 150 would fit, but one step may only double.
    pacer.record(10, 1);
    expect(pacer.size).toBe(20);
    pacer.record(20, 2);
    expect(pacer.size).toBe(40);
    // 40 units took 60 ms (1.5 ms each): 10 fit in 15 ms.
    pacer.record(40, 60);
    expect(pacer.size).toBe(10);
    // A single unit slower than the target still leaves steps of one.
    pacer.record(10, 500);
    expect(pacer.size).toBe(1);
  });

  it("stays within min and max, and ignores empty steps", () => {
    const pacer = new StepPacer({ initial: 4, min: 2, max: 6, targetMs: 10 });
    pacer.record(0, 100);
    expect(pacer.size).toBe(4);
    pacer.record(4, 0);
    expect(pacer.size).toBe(6);
    pacer.record(6, 1000);
    expect(pacer.size).toBe(2);
  });

  it("timed() runs a step with the current size and records it", () => {
    const pacer = new StepPacer({ initial: 3 });
    const sizes: number[] = [];
    pacer.timed((size) => (sizes.push(size), size));
    pacer.timed((size) => (sizes.push(size), size));
    expect(sizes).toEqual([3, 6]);
  });

  it("yieldToEventLoop lets timers that are due run first", async () => {
    let fired = false;
    setTimeout(() => (fired = true), 0);
    const until = Date.now() + 5;
    while (Date.now() < until) {
      // The timer is due once this loop ends.
    }
    await yieldToEventLoop();
    await yieldToEventLoop();
    expect(fired).toBe(true);
  });
});
