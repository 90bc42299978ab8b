/**
 * What a provider stores from the host's hooks, decided once for every provider: the item of a
 * completed turn (`syncTurn`), the checkpoint items archived before compression (`onPreCompress`)
 * and the fact that mirrors a built-in memory write (`onMemoryWrite`), plus the rule of
 * `onSessionSwitch` when queued writes cannot be stored. A provider only decides where and how
 * it stores them.
 */
import { createHash } from "node:crypto";
import type { ChatMessage, MemoryWriteAction, MemoryWriteMetadata, MemoryWriteTarget, SyncTurnOptions } from "@hermes/memory-core";
import { checkpointText, turnSpeaker, turnText } from "./transcript-text.js";

/** The session a hook runs in: its id and its user (the host's `userId`), either may be unknown. */
export interface HookSession {
  sessionId?: string | undefined;
  userId?: string | undefined;
}

/** The item a completed turn is stored as. */
export interface TurnItem {
  kind: "turn";
  /** `turnText`: the speaker-labelled user and assistant lines. */
  content: string;
  /** The label of the user's line (`turnSpeaker`): the turn author's name, else `User`. */
  speaker: string;
  sessionId?: string;
  userId?: string;
  /** `authorId` / `authorName` of the turn's author, when the host names one. */
  metadata: Record<string, unknown>;
}

/**
 * The item of a completed turn, or `null` when both sides are empty. The session is the turn's own
 * (`options.sessionId`), else the provider's current one; the user is the session's user, else the
 * turn's author (a profile without a user still keeps whose turn it was).
 */
export function turnItem(
  userContent: unknown,
  assistantContent: unknown,
  options: SyncTurnOptions | undefined,
  session: HookSession,
): TurnItem | null {
  const author = options?.turnAuthor;
  const content = turnText(userContent, assistantContent, author);
  if (!content) return null;
  const metadata: Record<string, unknown> = {};
  if (author?.id) metadata.authorId = author.id;
  if (author?.name) metadata.authorName = author.name;
  const item: TurnItem = { kind: "turn", content, speaker: turnSpeaker(author), metadata };
  const sessionId = options?.sessionId || session.sessionId;
  if (sessionId) item.sessionId = sessionId;
  const userId = session.userId || author?.id;
  if (userId) item.userId = userId;
  return item;
}

/** Text of a chat message: a string content, or the text parts of a content array joined by newlines. */
export function chatMessageText(message: ChatMessage): string {
  const content = message.content;
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content
      .map((part) => (part && typeof part === "object" && typeof part.text === "string" ? part.text : ""))
      .filter(Boolean)
      .join("\n");
  }
  return "";
}

/** One archived message of the evidence `onPreCompress` receives. */
export interface CheckpointItem {
  kind: "checkpoint";
  /** `checkpointText(role, text)`. */
  content: string;
  role: "user" | "assistant";
  /** The message's trimmed text. */
  text: string;
  /** The role, as the speaker of the archived line. */
  speaker: "user" | "assistant";
  sessionId?: string;
  userId?: string;
  /** `{ role }`. */
  metadata: { role: "user" | "assistant" };
  /** `checkpointDigest(role, text, userId)`: what makes the item unique in its store. */
  digest: string;
}

/**
 * The key of an archived message: SHA-256 (hex) of its user, role and trimmed text. The session is
 * not part of it: a compression, a resume and a branch each start a new session whose evidence
 * repeats messages already archived, and each message is archived once per user.
 */
export function checkpointDigest(role: string, text: string, userId?: string): string {
  return createHash("sha256")
    .update("fact\0")
    .update(userId ?? "")
    .update("\0")
    .update(`checkpoint\0${role}\0${text.trim()}`)
    .digest("hex");
}

/**
 * The checkpoint items of `messages`: every user and assistant message with text, once each (by
 * digest), in order; a compression summary (`_compressed_summary`) is not archived. Anything that is not such a message (another role, no text, not an object)
 * is skipped, never an error.
 */
export function checkpointItems(messages: unknown, session: HookSession): CheckpointItem[] {
  const out: CheckpointItem[] = [];
  const seen = new Set<string>();
  for (const message of Array.isArray(messages) ? (messages as unknown[]) : []) {
    if (!message || typeof message !== "object") continue;
    const role: unknown = (message as ChatMessage).role;
    if (role !== "user" && role !== "assistant") continue;
    // A summary of an earlier compression is not evidence of what was said.
    if ((message as ChatMessage)._compressed_summary === true) continue;
    const text = chatMessageText(message as ChatMessage).trim();
    if (!text) continue;
    const digest = checkpointDigest(role, text, session.userId || undefined);
    if (seen.has(digest)) continue;
    seen.add(digest);
    const item: CheckpointItem = {
      kind: "checkpoint",
      content: checkpointText(role, text),
      role,
      text,
      speaker: role,
      metadata: { role },
      digest,
    };
    if (session.sessionId) item.sessionId = session.sessionId;
    if (session.userId) item.userId = session.userId;
    out.push(item);
  }
  return out;
}

/** The fact a mirrored built-in memory write stores. */
export interface MirroredFact {
  kind: "fact";
  /** The written entry, trimmed. */
  content: string;
  /** `[target]`: `memory` (MEMORY.md) or `user` (USER.md). */
  tags: [MemoryWriteTarget];
  /** `{ source: "builtin", target }`. */
  metadata: { source: "builtin"; target: MemoryWriteTarget };
  sessionId?: string;
  userId?: string;
}

/** What mirroring one built-in memory write does: the fact to drop (by its text) and the fact to store. */
export interface MirroredWrite {
  /** The earlier entry's trimmed text, whose mirrored fact is removed first. */
  remove?: string;
  store?: MirroredFact;
}

/**
 * How a built-in memory write is mirrored. `add` stores the entry as a fact; `replace` removes the
 * fact of `metadata.previousContent` (unless it says the same) and stores the new entry; `remove`
 * removes the fact of `metadata.previousContent`, else of `content`. Texts are trimmed; an empty
 * text stores or removes nothing. The fact belongs to the session's user and to the write's
 * session (`metadata.sessionId`) when it names one.
 */
export function mirroredWrite(
  action: MemoryWriteAction,
  target: MemoryWriteTarget,
  content: unknown,
  metadata: MemoryWriteMetadata | undefined,
  session: HookSession,
): MirroredWrite {
  const text = typeof content === "string" ? content.trim() : "";
  const previous = typeof metadata?.previousContent === "string" ? metadata.previousContent.trim() : "";
  const out: MirroredWrite = {};
  const old = action === "remove" ? previous || text : action === "replace" ? previous : "";
  if (old && (action === "remove" || old !== text)) out.remove = old;
  if ((action === "add" || action === "replace") && text) {
    const fact: MirroredFact = { kind: "fact", content: text, tags: [target], metadata: { source: "builtin", target } };
    const sessionId = typeof metadata?.sessionId === "string" && metadata.sessionId ? metadata.sessionId : undefined;
    if (sessionId) fact.sessionId = sessionId;
    if (session.userId) fact.userId = session.userId;
    out.store = fact;
  }
  return out;
}

/**
 * The rule of `onSessionSwitch`: store what is queued (`flush`), then switch (`switchTo`: the new
 * session id, cached recall dropped) whether or not that worked, so later turns belong to the new
 * session. When the queued writes could not be stored, they stay queued (retried in the
 * background and by the next flush) and the flush's error is thrown: the manager records the
 * switch as failed and `retryPendingSessionSwitch()` tries the flush again. `true` means every
 * write accepted before the switch is stored.
 */
export async function switchSessionAfterFlush(flush: () => Promise<void>, switchTo: () => void): Promise<true> {
  try {
    await flush();
  } finally {
    switchTo();
  }
  return true;
}
