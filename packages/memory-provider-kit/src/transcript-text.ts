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

/**
 * The texts under which the messages of a stored turn are archived as checkpoint items
 * (`checkpointText` of its user part and of its assistant part), so erasing a turn can erase
 * those copies too. A turn's text is `<speaker>: <user>` and/or `Assistant: <assistant>` on
 * separate lines (`turnText`); `speaker` is the label it was stored with (default: the text before
 * the first ": "). When a part itself holds a line starting "Assistant: ", every possible split is
 * returned, so no archived copy is missed.
 */
export function checkpointCopies(turnContent: string, speaker?: string | null): string[] {
  const out = new Set<string>();
  const assistantPrefix = `${ASSISTANT_LABEL}: `;
  const separator = `\n${assistantPrefix}`;
  if (turnContent.startsWith(assistantPrefix)) out.add(checkpointText("assistant", turnContent.slice(assistantPrefix.length)));
  const label = speaker && speaker.trim() ? speaker.trim() : turnContent.slice(0, Math.max(0, turnContent.indexOf(": ")));
  const userPrefix = `${label}: `;
  if (label && turnContent.startsWith(userPrefix)) {
    const rest = turnContent.slice(userPrefix.length);
    out.add(checkpointText("user", rest));
    for (let p = rest.indexOf(separator); p >= 0; p = rest.indexOf(separator, p + 1)) {
      out.add(checkpointText("user", rest.slice(0, p)));
      out.add(checkpointText("assistant", rest.slice(p + separator.length)));
    }
  }
  return [...out];
}
