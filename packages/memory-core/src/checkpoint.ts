import { CheckpointUnavailableError, describeError } from "./errors.js";
import type { Logger } from "./logger.js";
import { silentLogger } from "./logger.js";
import type { MemoryManager } from "./manager.js";
import { BUILTIN_PROVIDER_NAME } from "./provider.js";
import type { ChatMessage } from "./provider.js";
import { sanitizeContext } from "./recall.js";

/** The part of a `MemoryManager` the compression helpers use (lets hosts pass a stand-in). */
export type CheckpointManager = Pick<MemoryManager, "supportsPreCompressCheckpoint" | "onPreCompress" | "providers">;

const REMEDIATION = "set compression.checkpoint_required: false, or switch to a memory provider that implements checkpoint API v2";

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function hasProse(content: unknown): boolean {
  if (typeof content === "string") return content.trim() !== "";
  if (Array.isArray(content)) return content.length > 0;
  return Boolean(content);
}

/**
 * Checkpoint evidence for API v2 providers: only the direct user/assistant prose of a transcript.
 * Drops system and tool rows, non-objects, earlier compaction summaries (`_compressed_summary`)
 * and assistant tool-call wrappers without prose; an assistant row with prose AND `tool_calls` is
 * kept as a copy without `tool_calls`. Never mutates the input (kept rows are the same objects).
 */
export function normalizeCheckpointEvidence(messages: ReadonlyArray<unknown> | null | undefined): ChatMessage[] {
  const out: ChatMessage[] = [];
  if (!Array.isArray(messages)) return out;
  for (const row of messages as unknown[]) {
    if (!isRecord(row)) continue;
    if (row.role !== "user" && row.role !== "assistant") continue;
    if (row._compressed_summary) continue;
    const toolCalls = row.tool_calls;
    const hasToolCalls = Array.isArray(toolCalls) ? toolCalls.length > 0 : Boolean(toolCalls);
    if (row.role === "assistant" && hasToolCalls) {
      if (!hasProse(row.content)) continue;
      const { tool_calls: _dropped, ...withoutCalls } = row;
      out.push(withoutCalls as ChatMessage);
      continue;
    }
    out.push(row as ChatMessage);
  }
  return out;
}

/**
 * Host helper called right before context compression discards `messages`. Normalises the
 * evidence and asks the manager for the pre-compress context (sanitised of memory fences).
 *
 * With `checkpointRequired` (config `compression.checkpoint_required: true`) it fails closed: it
 * throws `CheckpointUnavailableError` (message starts with `BLOCKED_MISSING_PREREQUISITE:`) when
 * there is no manager, no provider implementing checkpoint API v2, the capability probe throws,
 * or the provider's checkpoint fails. The host must then abort compression and keep the
 * uncompressed transcript (the call is retryable). Without it, every failure yields `""`.
 */
export async function preCompress(
  manager: CheckpointManager | null | undefined,
  messages: ChatMessage[],
  options: { checkpointRequired: boolean; logger?: Logger },
): Promise<string> {
  const logger = options.logger ?? silentLogger;
  const evidence = normalizeCheckpointEvidence(messages);
  if (!options.checkpointRequired) {
    if (!manager) return "";
    try {
      return sanitizeContext(await manager.onPreCompress(messages, { evidenceMessages: evidence, requireCheckpoint: false }));
    } catch (error) {
      logger.debug(`Pre-compress memory context failed (best effort): ${describeError(error)}`);
      return "";
    }
  }

  if (!manager || typeof manager.supportsPreCompressCheckpoint !== "function") {
    throw new CheckpointUnavailableError("no active provider implements checkpoint API v2", { remediation: true });
  }
  let capable: boolean;
  try {
    capable = manager.supportsPreCompressCheckpoint(2);
  } catch (error) {
    throw new CheckpointUnavailableError("provider capability probe failed", { cause: error });
  }
  if (!capable) {
    throw new CheckpointUnavailableError("active provider does not implement checkpoint API v2", { remediation: true });
  }
  let result: string;
  try {
    result = await manager.onPreCompress(messages, {
      evidenceMessages: evidence,
      requireCheckpoint: true,
      checkpointApiVersion: 2,
    });
  } catch (error) {
    const type = error instanceof Error ? error.name : typeof error;
    logger.warn(`Required pre-compress checkpoint failed (${type})`);
    // No remediation text: a capable provider failed, so retrying is the right move.
    throw new CheckpointUnavailableError("provider checkpoint API v2 failed", { cause: error });
  }
  return typeof result === "string" ? sanitizeContext(result) : "";
}

/**
 * The start-up warning for `compression.checkpoint_required: true` without a provider that
 * implements checkpoint API v2, or `null` when the gate is off, a capable provider is active, or
 * the capability probe throws (start-up must never be refused over the probe). The host logs it;
 * this function logs nothing.
 */
export function checkpointRequiredWarning(
  manager: CheckpointManager | null | undefined,
  options: { checkpointRequired: boolean },
): string | null {
  if (options.checkpointRequired !== true) return null;
  let names = "no active provider";
  if (manager) {
    try {
      if (manager.supportsPreCompressCheckpoint(2)) return null;
      const external = manager.providers.map((p) => p.name).filter((n) => n !== BUILTIN_PROVIDER_NAME);
      if (external.length > 0) names = external.join(", ");
    } catch {
      return null;
    }
  }
  return `compression.checkpoint_required is enabled but the active memory provider (${names}) does not implement checkpoint API v2. Compress will fail closed. Recover by ${REMEDIATION}.`;
}
