/**
 * The stored text of conversation turns and archived checkpoint messages, identical in every
 * provider: each message on its own line, prefixed with its speaker label. The user's label is the
 * turn author's name when the host gives one (`turnAuthor.name`), else `User`; the assistant's is
 * `Assistant`. Checkpoint messages use the same labels by role.
 */
import type { TurnAuthor } from "@hermes/memory-core";

/** Label of the assistant's lines. */
export const ASSISTANT_LABEL = "Assistant";
/** Label of the user's lines when the host names no turn author. */
export const USER_LABEL = "User";

/** The speaker label of the turn's user message: the author's trimmed name, else `User`. */
export function turnSpeaker(author?: TurnAuthor | null): string {
  const name = typeof author?.name === "string" ? author.name.trim() : "";
  return name || USER_LABEL;
}

/**
 * The stored text of one turn: `<speaker>: <user>` and `Assistant: <assistant>` lines (each
 * trimmed; an empty side is left out). `""` when both sides are empty.
 */
export function turnText(userContent: unknown, assistantContent: unknown, author?: TurnAuthor | null): string {
  const user = typeof userContent === "string" ? userContent.trim() : "";
  const assistant = typeof assistantContent === "string" ? assistantContent.trim() : "";
  const lines: string[] = [];
  if (user) lines.push(`${turnSpeaker(author)}: ${user}`);
  if (assistant) lines.push(`${ASSISTANT_LABEL}: ${assistant}`);
  return lines.join("\n");
}

/** The stored text of one archived checkpoint message: `User: <text>` for role `user`, else `Assistant: <text>`. */
export function checkpointText(role: string, text: string): string {
  return `${role === "user" ? USER_LABEL : ASSISTANT_LABEL}: ${text.trim()}`;
}
