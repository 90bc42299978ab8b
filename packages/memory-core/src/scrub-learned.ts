/**
 * "Learning" for the egress scrub: once a rule has identified a value as a secret, every other
 * occurrence of that value in the same hand-off is a copy of the same secret (the model repeating
 * a key, a note written before the `KEY=value` line), so it is masked too, wherever it stands.
 */
import { REDACTED } from "./scrub-rules.js";

/** Values shorter than this are too common to be told apart from ordinary words; they are not learned. */
const MIN_LEARNED_LENGTH = 4;
/**
 * A learned value at least this long is masked wherever it occurs, even glued to other
 * characters: it is too specific to be part of an ordinary word. A shorter one only where it
 * stands alone (not inside a longer run of letters and digits), so `pass1` does not eat `pass1x`.
 */
const ANYWHERE_LENGTH = 12;
/** Longest tokens inside a secret value that are also learned on their own (a password inside a URL's userinfo). */
const TOKEN = /[A-Za-z0-9_\-./+]{16,}/g;
const WORD = /[A-Za-z0-9_]/;
/** With more values than this, candidates are found by one scan of the text instead of one search per value. */
const SEARCH_EACH_LIMIT = 32;

/**
 * The values to mask, from the secrets the rules replaced: each whole value (the parts between
 * markers, when an earlier rule had already masked some of it) and each long token inside it.
 * Longest first, so a value is masked before any shorter value it contains.
 */
function learnedValues(found: Iterable<string>): string[] {
  const values = new Set<string>();
  const add = (value: string): void => {
    if (value.length >= MIN_LEARNED_LENGTH && !REDACTED.includes(value)) values.add(value);
  };
  for (const secret of found) {
    for (const part of secret.split(REDACTED)) {
      add(part.trim());
      for (const token of part.matchAll(TOKEN)) add(token[0]);
    }
  }
  return [...values].sort((a, b) => b.length - a.length);
}

function standsAlone(text: string, at: number, value: string): boolean {
  if (value.length >= ANYWHERE_LENGTH) return true;
  const glued = (outside: string | undefined, edge: string | undefined): boolean =>
    outside !== undefined && edge !== undefined && WORD.test(outside) && WORD.test(edge);
  return !glued(text[at - 1], value[0]) && !glued(text[at + value.length], value[value.length - 1]);
}

/** Learned values by their first characters, for one left-to-right scan of a text. */
interface HeadIndex {
  byHead: Map<string, string[]>;
  firsts: Set<string>;
}

function indexByHead(values: readonly string[]): HeadIndex {
  const byHead = new Map<string, string[]>();
  const firsts = new Set<string>([REDACTED[0] as string]);
  for (const value of values) {
    const head = value.slice(0, MIN_LEARNED_LENGTH);
    const list = byHead.get(head);
    if (list) list.push(value);
    else byHead.set(head, [value]);
    firsts.add(value[0] as string);
  }
  return { byHead, firsts };
}

function scan(text: string, { byHead, firsts }: HeadIndex): string {
  let out = "";
  let pos = 0;
  for (let at = 0; at + MIN_LEARNED_LENGTH <= text.length;) {
    if (!firsts.has(text[at] as string)) {
      at++;
      continue;
    }
    if (text.startsWith(REDACTED, at)) {
      at += REDACTED.length;
      continue;
    }
    const candidates = byHead.get(text.slice(at, at + MIN_LEARNED_LENGTH));
    const value = candidates?.find((v) => text.startsWith(v, at) && standsAlone(text, at, v));
    if (value === undefined) {
      at++;
      continue;
    }
    out += text.slice(pos, at) + REDACTED;
    at += value.length;
    pos = at;
  }
  return pos === 0 ? text : out + text.slice(pos);
}

/**
 * Learn the secrets the rules replaced (`found`) and return the function that masks them in a
 * text: every occurrence of a learned value is replaced by the marker, left to right, the longest
 * value first where several start at the same place; existing markers are never rewritten. Each
 * call is linear in its text for any number of values (with many, one scan looks candidates up by
 * their first characters; the index is built once for every text of the hand-off).
 */
export function learnSecrets(found: Iterable<string>): (text: string) => string {
  const values = learnedValues(found);
  if (values.length === 0) return (text) => text;
  let index: HeadIndex | undefined;
  return (text) => {
    if (text.length < MIN_LEARNED_LENGTH) return text;
    if (values.length <= SEARCH_EACH_LIMIT) {
      const present = values.filter((v) => text.includes(v));
      return present.length === 0 ? text : scan(text, indexByHead(present));
    }
    index ??= indexByHead(values);
    return scan(text, index);
  };
}
