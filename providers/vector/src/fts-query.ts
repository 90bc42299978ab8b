/**
 * Turning arbitrary user text into a safe FTS5 query for the sidecar's BM25 index. Every term is
 * quoted, so FTS syntax the user typed (`"`, `*`, `NEAR`, `-`, `:`, parentheses…) is matched as
 * text, never parsed; input with no usable word gives `null` (no keyword hits) instead of an error.
 * Kept in step with @hermes/memory-sqlite's builder (the packages do not depend on each other).
 */

/** Longest input looked at: a 100 KB paste must not turn into a 20,000-term query. */
const MAX_INPUT_CHARS = 4096;
/** Most terms one query carries; more cost latency without improving the top hits. */
export const MAX_QUERY_TERMS = 24;
/** Longest single term kept; longer "words" are hashes, base64 or noise. */
const MAX_TERM_CHARS = 64;

// English stopwords plus question and filler words: they carry no topic, only matching cost, and
// in an OR query they let every chatty turn outrank the one that shares the question's topic.
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
    "also anything else ever just kind like likely may might much must really something sort thing things " +
    "tell know remember recall please whats hows whos wheres d ll m s t re ve"
  ).split(/\s+/),
);

const TOKEN_PATTERN = /[\p{L}\p{N}\p{M}]+(?:['’][\p{L}]+)*/gu;

/** True when `word` (lower-case) is a stopword the query builder drops. */
export function isStopword(word: string): boolean {
  return STOPWORDS.has(word);
}

/**
 * Lower-case, stopword-free word tokens of `text` as the query builder sees them (letters, digits
 * and combining marks; "caroline's" becomes "caroline"). Never throws; looks at 4 KB at most.
 */
export function queryTokens(text: string): string[] {
  const input = text.length > MAX_INPUT_CHARS ? text.slice(0, MAX_INPUT_CHARS) : text;
  const out: string[] = [];
  for (const match of input.toLowerCase().matchAll(TOKEN_PATTERN)) {
    let token = match[0].replace(/’/g, "'");
    if (STOPWORDS.has(token)) continue;
    // The FTS tokenizer would split "caroline's" into "caroline" + "s" anyway.
    const apostrophe = token.indexOf("'");
    if (apostrophe > 0) token = token.slice(0, apostrophe);
    if (token.length === 0 || token.length > MAX_TERM_CHARS || STOPWORDS.has(token)) continue;
    out.push(token);
  }
  return out;
}

/** Unique query terms of `text` in first-seen order, at most `max`. */
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

/**
 * FTS5 MATCH expression for user text: unique non-stopword terms, each quoted, joined with OR.
 * `null` when nothing searchable is left (e.g. only stopwords or punctuation). Never throws.
 */
export function buildFtsQuery(text: unknown, maxTerms = MAX_QUERY_TERMS): string | null {
  if (typeof text !== "string" || text.length === 0) return null;
  const terms = uniqueTerms(text, maxTerms);
  return terms.length === 0 ? null : terms.map(quoteTerm).join(" OR ");
}
