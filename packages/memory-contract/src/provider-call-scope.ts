import { AsyncLocalStorage } from "node:async_hooks";

/**
 * Marks async work started by one provider instance: every harness call into a provider runs
 * inside it, and everything that call starts (timers, promises, fs requests) inherits it. The
 * handle and write checks use it to tell the provider's activity from the test runner's.
 */
export const providerCallScope = new AsyncLocalStorage<{ label: string }>();
