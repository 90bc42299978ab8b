import { describeError } from "@hermes/memory-core";

/**
 * Errors a provider package throws where no call of the kit can catch them: an exception thrown
 * from a timer or event callback (`uncaughtException`) and a rejected promise nobody handles
 * (`unhandledRejection`). Without a listener Node would crash the CLI with a raw stack and leave
 * its temp dirs behind; while a capture is active they are queued instead, and the clause running
 * when they arrive fails with them (see `ClauseRunner`).
 */
const queue: string[] = [];
let captures = 0;

function onUncaught(error: unknown): void {
  queue.push(`uncaught exception: ${describeError(error)}`);
}

function onRejection(reason: unknown): void {
  queue.push(`unhandled promise rejection: ${describeError(reason)}`);
}

/** Start queueing stray errors; returns the function that stops (captures nest). */
export function captureStrayErrors(): () => void {
  if (captures++ === 0) {
    process.on("uncaughtException", onUncaught);
    process.on("unhandledRejection", onRejection);
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    if (--captures === 0) {
      process.off("uncaughtException", onUncaught);
      process.off("unhandledRejection", onRejection);
    }
  };
}

/** The stray errors queued since the last call (and clear them). */
export function takeStrayErrors(): string[] {
  return queue.splice(0);
}
