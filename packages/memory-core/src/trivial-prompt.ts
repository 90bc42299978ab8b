/**
 * Trivial prompts ("ok", "thanks!", "/help") carry no recall intent: the host skips prefetch for
 * them, and a provider may skip its own recall work for them, because recalling for an
 * acknowledgement only adds latency and noise to the next model call.
 */

// Longer alternatives first so "thank you" / "okay" win over their prefixes.
const TRIVIAL_WORDS = [
  "thank you",
  "go ahead",
  "proceed",
  "continue",
  "got it",
  "thanks",
  "hello",
  "okay",
  "sure",
  "yeah",
  "nope",
  "great",
  "done",
  "next",
  "lgtm",
  "cool",
  "nice",
  "do it",
  "yes",
  "yep",
  "nah",
  "hey",
  "sup",
  "no",
  "ok",
  "hi",
  "yo",
  "y",
  "n",
  "k",
];

function escape(word: string): string {
  return word.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

// Only whitespace and punctuation may follow the word: "hi!", "thanks :)", "done???" are trivial,
// "k8s", "yolo", "note" are not.
const TRAILING = "[\\s!?.:;,\"'~\\u2018\\u2019\\u201C\\u201D\\u2014\\u2013\\u2026()\\[\\]{}<>*&^%$#@+=`\\u00A0]*";
const TRIVIAL_PATTERN = new RegExp(`^(?:${TRIVIAL_WORDS.map(escape).join("|")})${TRAILING}$`, "i");

/**
 * True when a user message has no recall intent: `null`/empty/whitespace, a slash command
 * (`/help`), or a bare acknowledgement word (yes, ok, thanks, hi, lgtm, …) followed only by
 * whitespace or punctuation. Pure and cheap; call it before every prefetch.
 */
export function isTrivialPrompt(text: string | null | undefined): boolean {
  if (text === null || text === undefined) return true;
  const stripped = String(text).trim();
  if (stripped === "") return true;
  if (stripped.startsWith("/")) return true;
  return TRIVIAL_PATTERN.test(stripped);
}

/** `memory.provider` values meaning "built-in memory only, no plugin". */
export const CORE_MEMORY_PROVIDER_SENTINELS: ReadonlySet<string> = new Set(["", "default", "builtin", "built-in", "none"]);

/**
 * True when a `memory.provider` value selects built-in memory only (blank, `default`, `builtin`,
 * `built-in`, `none`; case-insensitive, trimmed). Tooling must never look these up as plugins.
 */
export function isCoreMemoryProvider(name: unknown): boolean {
  const text = name === null || name === undefined || name === false ? "" : String(name);
  return CORE_MEMORY_PROVIDER_SENTINELS.has(text.trim().toLowerCase());
}
