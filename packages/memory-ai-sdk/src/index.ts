/**
 * @hermes/memory-ai-sdk — Hermes memory for the Vercel AI SDK (`ai` 6.x): the memory tools as an
 * AI SDK tool set and a language-model middleware that recalls before and syncs after each call.
 */
export { memoryTools, type MemoryToolsOptions } from "./tools.js";
export { memoryMiddleware, type MemoryMiddlewareOptions } from "./middleware.js";
