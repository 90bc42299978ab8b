/**
 * Recalled text is data: nothing in it may read as a tag. A list of forbidden tag spellings can
 * always be beaten by one more spelling (split, padded, full-width, zero-width, look-alike
 * letters), so the rule here does not look at tag names at all: the character that would open a
 * tag is escaped wherever what follows it could be read as a tag name.
 */

/** What an escaped tag opener is written as. */
export const ESCAPED_TAG_OPENER = "&lt;";

/** `<` and its compatibility forms (NFKC folds these to `<`). */
const TAG_OPENERS = new Set(["<", "\ufe64", "\uff1c"]);
/**
 * Characters that look like `<` without being it. They open a tag for a reader only before a Latin,
 * Greek or Cyrillic letter, so CJK text quoting a title in 〈 〉 keeps its brackets.
 */
const LOOKALIKE_OPENERS = new Set(["\u2039", "\u2329", "\u3008", "\u27e8", "\u276c", "\u276e", "\u02c2", "\u1438", "\u16b2", "\u{1d236}"]);
/** Any opener at all: text without one (nearly every recall and tool result) is returned as it is, unscanned. */
const ANY_OPENER = new RegExp(`[${[...TAG_OPENERS, ...LOOKALIKE_OPENERS].join("")}]`, "u");
const SLASHES = new Set(["/", "\\", "\uff0f", "\uff3c", "\u2044", "\u2215", "\u29f8", "\u2571", "\ufe68"]);
/** Invisible or spacing characters a reader skips between a tag's opener, its slash and its name (Hangul fillers are letters that show as blanks). */
const SKIPPED = /^[\p{Cf}\p{Mn}\p{Me}\p{Z}\s\u115f\u1160\u3164\uffa0]$/u;
const ANY_LETTER = /^\p{L}$/u;
const TAG_SCRIPT_LETTER = /^[\p{Script=Latin}\p{Script=Greek}\p{Script=Cyrillic}]$/u;

/**
 * A tool result as a model will read it: JSON text through `escapeRecalledJson` (the parsed value
 * is unchanged), any other text through `escapeRecalledText`. Tool results carry recalled memory,
 * and no stored text may read as a tag that closes a fence around them. Never throws.
 */
export function escapeToolResult(text: string): string {
  if (typeof text !== "string" || text === "") return "";
  if (!ANY_OPENER.test(text)) return text;
  try {
    JSON.parse(text);
  } catch {
    return escapeRecalledText(text);
  }
  return escapeRecalledJson(text);
}

/**
 * `json` (JSON text, e.g. a tool result carrying recalled memory) with every `<` and its full-width
 * and small forms written as `\u003c` / `\uff1c` / `\ufe64`, and every `<` look-alike that opens a
 * tag (as `escapeRecalledText` decides) written as its `\u` escape. A JSON parser reads back exactly
 * the same value, while the text a model reads holds no character that opens a tag, so no stored
 * memory can close a fence around the result. Outside strings JSON has none of these characters.
 * Linear; never throws.
 */
export function escapeRecalledJson(json: string): string {
  return rewriteOpeners(json, (chars, i, ch) =>
    TAG_OPENERS.has(ch) || (LOOKALIKE_OPENERS.has(ch) && opensTag(chars, i + 1, TAG_SCRIPT_LETTER)) ? unicodeEscape(ch) : null,
  );
}

/** `ch` as JSON `\uXXXX` escapes (a surrogate pair for characters beyond the BMP). */
function unicodeEscape(ch: string): string {
  let out = "";
  for (let k = 0; k < ch.length; k++) out += `\\u${ch.charCodeAt(k).toString(16).padStart(4, "0")}`;
  return out;
}

/**
 * `text` with the opener of everything that could read as a tag written as `&lt;`: a `<` (or its
 * full-width or small form) before a letter, and a `<` look-alike (‹ 〈 ⟨ ❮ ˂ …) before a Latin,
 * Greek or Cyrillic letter — in both cases with any spaces, zero-width characters and one slash in
 * between. Nothing else changes, so `a <= b`, `<3` and prose stay as they are. Linear in the
 * length of `text`; never throws.
 */
export function escapeRecalledText(text: string): string {
  return rewriteOpeners(text, (chars, i, ch) => {
    const plain = TAG_OPENERS.has(ch);
    return (plain || LOOKALIKE_OPENERS.has(ch)) && opensTag(chars, i + 1, plain ? ANY_LETTER : TAG_SCRIPT_LETTER)
      ? ESCAPED_TAG_OPENER
      : null;
  });
}

/**
 * `text` with each character `replace` gives a replacement for (by code point, with the whole text
 * to look ahead in) replaced; `text` itself when it holds no opener or nothing was replaced.
 */
function rewriteOpeners(text: string, replace: (chars: readonly string[], i: number, ch: string) => string | null): string {
  if (typeof text !== "string" || text === "") return "";
  if (!ANY_OPENER.test(text)) return text;
  const chars = Array.from(text);
  let out = "";
  let changed = false;
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i]!;
    const replacement = replace(chars, i, ch);
    out += replacement ?? ch;
    if (replacement !== null) changed = true;
  }
  return changed ? out : text;
}

/** Whether a tag name starts at `from`: skipped characters, at most one slash, skipped characters, then a letter `name` accepts. */
function opensTag(chars: readonly string[], from: number, name: RegExp): boolean {
  let slashSeen = false;
  for (let j = from; j < chars.length; j++) {
    const ch = chars[j]!;
    if (SKIPPED.test(ch)) continue;
    if (!slashSeen && SLASHES.has(ch)) {
      slashSeen = true;
      continue;
    }
    return name.test(Array.from(ch.normalize("NFKC"))[0] ?? ch);
  }
  return false;
}
