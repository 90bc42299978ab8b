import { createHook, type AsyncHook } from "node:async_hooks";

// Resource types that can keep the event loop alive. FILEHANDLE is left out: an unclosed
// FileHandle is closed on GC and never holds the loop open.
const TRACKED_TYPES = new Set([
  "Timeout",
  "Immediate",
  "TCPWRAP",
  "TCPSERVERWRAP",
  "TCPCONNECTWRAP",
  "PIPEWRAP",
  "PIPESERVERWRAP",
  "PIPECONNECTWRAP",
  "UDPWRAP",
  "TTYWRAP",
  "FSEVENTWRAP",
  "STATWATCHER",
  "PROCESSWRAP",
  "SIGNALWRAP",
  "HTTPCLIENTREQUEST",
  "FSREQCALLBACK",
  "FSREQPROMISE",
  "WORKER",
  "MESSAGEPORT",
]);

interface Tracked {
  type: string;
  resource: object;
}

function isRefed(resource: object): boolean {
  const hasRef = (resource as { hasRef?: () => boolean }).hasRef;
  return typeof hasRef === "function" ? hasRef.call(resource) : true;
}

/**
 * Records the loop-holding resources (timers, sockets, servers, pending fs requests…) created
 * while `belongs()` is true, and forgets them when Node destroys them. What is still alive and
 * ref'd afterwards is what a provider left behind. Scoping by `belongs()` (an AsyncLocalStorage
 * marker) keeps the test runner's own timers and sockets out of the picture.
 */
export class ResourceTracker {
  private readonly live = new Map<number, Tracked>();
  private readonly hook: AsyncHook;

  constructor(belongs: () => boolean) {
    this.hook = createHook({
      init: (asyncId, type, _triggerAsyncId, resource) => {
        if (TRACKED_TYPES.has(type) && belongs()) this.live.set(asyncId, { type, resource: resource as object });
      },
      destroy: (asyncId) => {
        this.live.delete(asyncId);
      },
    });
  }

  start(): void {
    this.hook.enable();
  }

  stop(): void {
    this.hook.disable();
    this.live.clear();
  }

  /** Tracked resources still alive and ref'd, as sorted `Timeout ×1` strings. */
  leftovers(): string[] {
    const counts = new Map<string, number>();
    for (const { type, resource } of this.live.values()) {
      if (isRefed(resource)) counts.set(type, (counts.get(type) ?? 0) + 1);
    }
    return [...counts].map(([type, n]) => `${type} ×${n}`).sort();
  }

  /**
   * Poll until nothing tracked is left or `graceMs` passed; returns what is left. The poll timer
   * is created outside the tracked scope, so it never counts itself; it stays ref'd because in a
   * bare CLI process it may be the only thing keeping the loop alive.
   */
  async settle(graceMs: number): Promise<string[]> {
    const deadline = Date.now() + graceMs;
    for (;;) {
      const left = this.leftovers();
      if (left.length === 0 || Date.now() >= deadline) return left;
      await new Promise<void>((resolve) => setTimeout(resolve, 20));
    }
  }
}
