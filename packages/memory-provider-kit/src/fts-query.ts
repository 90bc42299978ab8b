/**
 * Turning arbitrary user text into a safe SQLite FTS5 query, shared by every provider that keeps an
 * FTS5 index (both reference providers; third-party SQLite providers too). Every token is quoted,
 * so FTS syntax the user typed (`"`, `*`, `NEAR`, `-`, `:`, parentheses…) is matched as text, never
 * parsed; input that yields no usable token produces `null` (search returns nothing) instead of an
 * error.
 */

/**
 * Longest query text a search reads (its first characters): a 100 KB paste must not turn into a
 * 20,000-term query, nor into an embedding of the whole paste.
 */
export const MAX_QUERY_CHARS = 4096;
/** Most terms one query may carry; more terms cost latency without improving the top hits. */
export const MAX_QUERY_TERMS = 24;
/** Longest single term kept; longer "words" are hashes, base64 or noise. */
const MAX_TERM_CHARS = 64;

// English stopwords plus question and filler words: they carry no topic, only matching cost.
const STOPWORDS = new Set(
  (
    "a about above after again against all am an and any are aren't as at be because been before being below between both but by " +
    "can can't cannot could couldn't did didn't do does doesn't doing don't down during each few for from further had hadn't has hasn't " +
    "have haven't having he he'd he'll he's her here here's hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't " +
    "it it's its itself let's me more most mustn't my myself no nor not of off on once only or other ought our ours ourselves out over own " +
    "same shan't she she'd she'll she's should shouldn't so some such than that that's the their theirs them themselves then there there's " +
    "these they they'd they'll they're they've this those through to too under until up very was wasn't we we'd we'll we're we've were " +
    "weren't what what's when when's where where's which while who who's whom why why's with won't would wouldn't you you'd you'll you're " +
    "you've your yours yourself yourselves " +
    // question / chat filler
    "also any anything else ever just kind like likely may might much must really something sort thing things " +
    "tell know remember recall please would could whats hows whos wheres d ll m s t re ve"
  ).split(/\s+/),
);

const TOKEN_PATTERN = /[\p{L}\p{N}\p{M}]+(?:['’][\p{L}]+)*/gu;

/**
 * The part of a query a search reads: its first `MAX_QUERY_CHARS` characters (never ending in half
 * of a surrogate pair). Providers that embed the query embed this, as the keyword side reads it.
 * Anything but text gives "".
 */
export function clipQuery(text: string): string {
  if (typeof text !== "string") return "";
  if (text.length <= MAX_QUERY_CHARS) return text;
  const last = text.charCodeAt(MAX_QUERY_CHARS - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? MAX_QUERY_CHARS - 1 : MAX_QUERY_CHARS);
}

/** True when `word` (lower-case) is a stopword the query builder drops. */
export function isStopword(word: string): boolean {
  return STOPWORDS.has(word);
}

/**
 * Split text into lower-case word tokens the way the query builder sees them (letters, digits and
 * combining marks; apostrophe contractions stay one token then lose their suffix).
 */
export function queryTokens(text: string): string[] {
  const input = clipQuery(text);
  const out: string[] = [];
  for (const match of input.toLowerCase().matchAll(TOKEN_PATTERN)) {
    let token = match[0].replace(/’/g, "'");
    if (STOPWORDS.has(token)) continue;
    // "caroline's" → "caroline": the tokenizer would split it into "caroline" + "s" anyway.
    const apostrophe = token.indexOf("'");
    if (apostrophe > 0) token = token.slice(0, apostrophe);
    if (token.length === 0 || token.length > MAX_TERM_CHARS || STOPWORDS.has(token)) continue;
    out.push(token);
  }
  return out;
}

/** Options for `buildFtsQuery`. */
export interface FtsQueryOptions {
  /** Cap on the number of terms (default `MAX_QUERY_TERMS`). */
  maxTerms?: number;
}

/**
 * Build an FTS5 MATCH expression from user text: unique non-stopword tokens, each double-quoted,
 * joined with OR. Returns `null` when nothing searchable is left. Never throws.
 */
export function buildFtsQuery(text: unknown, options: FtsQueryOptions = {}): string | null {
  if (typeof text !== "string" || text.length === 0) return null;
  const terms = uniqueTerms(text, options.maxTerms ?? MAX_QUERY_TERMS);
  if (terms.length === 0) return null;
  return terms.map(quoteTerm).join(" OR ");
}

/** Unique query terms of `text`, in first-seen order, at most `max`. */
export function uniqueTerms(text: string, max = MAX_QUERY_TERMS): string[] {
  const seen = new Set<string>();
  for (const token of queryTokens(text)) {
    if (seen.size >= max) break;
    seen.add(token);
  }
  return [...seen];
}

/** Quote one term for FTS5 (a quoted string is always a plain phrase, whatever it contains). */
export function quoteTerm(term: string): string {
  return `"${term.replace(/"/g, '""')}"`;
}
