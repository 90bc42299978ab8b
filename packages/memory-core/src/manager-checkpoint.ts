/**
 * Checkpoints before context compression: which checkpoint API each provider declares, and the
 * pre-compress fan-out that gives checkpoint providers the evidence and the host's requirement
 * while v1 providers keep the raw messages and are never required to checkpoint.
 */
import { CheckpointUnavailableError } from "./errors.js";
import type { HookRunner } from "./manager-hooks.js";
import type { ProviderRegistry } from "./manager-registry.js";
import type { ChatMessage, MemoryProvider } from "./provider.js";

/** What `onPreCompress` takes besides the messages. */
export interface ManagerPreCompressOptions {
  evidenceMessages?: ChatMessage[];
  requireCheckpoint?: boolean;
  checkpointApiVersion?: number;
}

/** Python `int(x)` for a provider's checkpoint version: absent → 1, unparseable → null. */
function checkpointVersionOf(provider: MemoryProvider): number | null {
  let raw: unknown;
  try {
    raw = (provider as { preCompressCheckpointApiVersion?: unknown }).preCompressCheckpointApiVersion;
  } catch {
    return null; // a getter that throws declares nothing usable
  }
  if (raw === undefined || raw === null) return 1;
  if (typeof raw === "number") return Number.isFinite(raw) ? Math.trunc(raw) : null;
  if (typeof raw === "string" && /^\s*[+-]?\d+\s*$/.test(raw)) return Number.parseInt(raw, 10);
  if (typeof raw === "boolean") return raw ? 1 : 0;
  return null;
}

/** The pre-compress fan-out (the rules are `MemoryManager.onPreCompress`'s). */
export class CheckpointFanOut {
  constructor(
    private readonly registry: ProviderRegistry,
    private readonly hooks: HookRunner,
  ) {}

  /** True when some provider implements pre-compress checkpoint API `apiVersion`. */
  supports(apiVersion: number): boolean {
    return this.registry.list.some((p) => {
      const version = checkpointVersionOf(p);
      return version !== null && version >= apiVersion;
    });
  }

  /** Run `onPreCompress` on every provider; the non-empty results joined by a blank line. */
  async onPreCompress(messages: ChatMessage[], options: ManagerPreCompressOptions): Promise<string> {
    const requireCheckpoint = options.requireCheckpoint === true;
    const apiVersion = options.checkpointApiVersion ?? 2;
    const scrubbed = this.hooks.scrub(
      [
        Array.isArray(messages) ? [...messages] : [],
        Array.isArray(options.evidenceMessages) ? [...options.evidenceMessages] : null,
      ] as const,
      "the messages to compress",
    );
    if (!scrubbed.ok) {
      if (requireCheckpoint) throw new CheckpointUnavailableError(`the messages could not be scrubbed (${scrubbed.reason})`);
      return "";
    }
    const [raw, evidence] = scrubbed.value;
    const parts: string[] = [];
    let checkpointSucceeded = false;
    const isCheckpoint = (provider: MemoryProvider): boolean => (checkpointVersionOf(provider) ?? 1) >= apiVersion;
    await this.hooks.fanOut(
      [...this.registry.list],
      "on_pre_compress",
      (provider) => {
        const checkpoint = isCheckpoint(provider);
        const payload = (checkpoint && evidence ? evidence : raw) as ChatMessage[];
        return provider.onPreCompress([...payload], { requireCheckpoint: checkpoint ? requireCheckpoint : false });
      },
      (provider, outcome) => {
        if (outcome.status === "ok") {
          const result: unknown = outcome.value;
          if (typeof result === "string" && result.trim() !== "") parts.push(result);
          if (isCheckpoint(provider)) checkpointSucceeded = true;
        } else if (outcome.status === "error" && requireCheckpoint && isCheckpoint(provider)) {
          // A checkpoint the host required failed: stop here and let the host see why.
          throw outcome.error;
        }
      },
    );
    if (requireCheckpoint && !checkpointSucceeded) {
      throw new CheckpointUnavailableError(`No active memory provider completed pre-compress checkpoint API v${apiVersion}`, {
        remediation: true,
      });
    }
    return parts.join("\n\n");
  }
}
