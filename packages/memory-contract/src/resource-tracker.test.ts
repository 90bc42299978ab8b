import { describe, expect, it } from "vitest";
import { providerCallScope } from "./provider-call-scope.js";
import { ResourceTracker } from "./resource-tracker.js";

function trackedTracker(): ResourceTracker {
  return new ResourceTracker(() => providerCallScope.getStore()?.label === "tracked");
}

describe("ResourceTracker", () => {
  it("reports a ref'd interval created in scope and ignores unref'd ones and out-of-scope ones", async () => {
    const tracker = trackedTracker();
    tracker.start();
    const outside = setInterval(() => undefined, 60_000);
    const [leaked, unrefd] = providerCallScope.run({ label: "tracked" }, () => [
      setInterval(() => undefined, 60_000),
      setInterval(() => undefined, 60_000).unref(),
    ]);
    try {
      expect(await tracker.settle(50)).toEqual(["Timeout ×1"]);
      clearInterval(leaked);
      expect(await tracker.settle(1_000)).toEqual([]);
    } finally {
      clearInterval(leaked);
      clearInterval(unrefd);
      clearInterval(outside);
      tracker.stop();
    }
  });

  it("waits for timers that finish within the grace period", async () => {
    const tracker = trackedTracker();
    tracker.start();
    try {
      providerCallScope.run({ label: "tracked" }, () => setTimeout(() => undefined, 30));
      expect(await tracker.settle(1_000)).toEqual([]);
    } finally {
      tracker.stop();
    }
  });

  it("follows async work started in scope", async () => {
    const tracker = trackedTracker();
    tracker.start();
    let timer: NodeJS.Timeout | undefined;
    try {
      await providerCallScope.run({ label: "tracked" }, async () => {
        await Promise.resolve();
        setImmediate(() => {
          timer = setInterval(() => undefined, 60_000);
        });
      });
      await new Promise((resolve) => setImmediate(resolve));
      expect(tracker.leftovers()).toEqual(["Timeout ×1"]);
    } finally {
      clearInterval(timer);
      tracker.stop();
    }
  });
});
