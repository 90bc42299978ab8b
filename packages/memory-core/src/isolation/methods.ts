/** Which members of a provider a worker-hosted proxy forwards, and how each is bounded and counted. */

/** `MemoryProvider` hooks with a default in the base class: forwarded only when the provider overrides them. */
export const FORWARDED_HOOKS = [
  "initialize",
  "initializeForInspection",
  "handleToolCall",
  "saveConfig",
  "systemPromptBlock",
  "prefetch",
  "queuePrefetch",
  "syncTurn",
  "onTurnStart",
  "onSessionEnd",
  "onSessionSwitch",
  "onPreCompress",
  "onMemoryWrite",
  "onDelegation",
  "shutdown",
] as const;

/** Methods a provider may or may not have (`postSetup`, `getStatusConfig`, `SearchableMemory`): the proxy has them only when it does. */
export const OPTIONAL_METHODS = [
  "postSetup",
  "getStatusConfig",
  "remember",
  "search",
  "get",
  "forget",
  "stats",
  "flush",
  "forgetWhere",
  "update",
  "purgeExpired",
] as const;

/**
 * Calls that hand the provider data to store. One is acknowledged when a later `flush()` resolved
 * (providers with `flush`), or when it resolved itself (providers without): until then, a worker
 * replaced under it may have lost it.
 */
export const WRITE_METHODS: ReadonlySet<string> = new Set([
  "syncTurn",
  "remember",
  "forget",
  "forgetWhere",
  "update",
  "purgeExpired",
  "onMemoryWrite",
  "onDelegation",
  "onSessionEnd",
  "onPreCompress",
]);
