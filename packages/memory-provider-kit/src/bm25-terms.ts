/**
 * FTS5's BM25 arithmetic and the word counting the layered ranker scores rows with: IDF, length
 * normalisation, SQLite varints (FTS5's `averages` and `docsize` records), picking the best
 * estimates of a pool, and counting a word's occurrences in a column's text.
 */

/** FTS5's BM25 constants (fts5_aux.c): k1 and b. */
export const K1 = 1.2;
export const B = 0.75;

/** A column's text as words are counted in it (see `countText`). */
export interface CountText {
  /** The text, diacritics folded when it has any. */
  text: string;
  /** `text` lower-cased when it is plain ASCII, else `null`. */
  lower: string | null;
}

/**
 * The `wanted` ids with the highest estimates (`estimates[i]` belongs to `ids[i]`), best first, ties
 * to the lower id: the order a full sort by estimate, then id, would give, without sorting every
 * pooled row (a pool holds up to thousands; a few dozen are wanted).
 */
export function bestByEstimate(ids: readonly number[], estimates: readonly number[], wanted: number): number[] {
  if (wanted <= 0) return [];
  const order = Array.from(ids.keys());
  if (ids.length > wanted) {
    // The `wanted`-th best estimate: every row above it is taken, rows equal to it by lowest id.
    const bar = nthSmallest(Float64Array.from(estimates), ids.length - wanted);
    const above: number[] = [];
    const at: number[] = [];
    for (let i = 0; i < ids.length; i++) {
      if (estimates[i]! > bar) above.push(i);
      else if (estimates[i] === bar) at.push(i);
    }
    at.sort((x, y) => ids[x]! - ids[y]!);
    order.length = 0;
    order.push(...above, ...at.slice(0, wanted - above.length));
  }
  return order.sort((x, y) => estimates[y]! - estimates[x]! || ids[x]! - ids[y]!).map((i) => ids[i]!);
}

/**
 * The value at `index` of `values` sorted ascending (`values` is reordered): a quickselect, linear
 * on average, where a full sort of a pool's thousands of estimates cost several times more.
 */
export function nthSmallest(values: Float64Array, index: number): number {
  let lo = 0;
  let hi = values.length - 1;
  while (hi > lo) {
    // Median of three as the pivot, then Hoare's partition.
    const mid = (lo + hi) >>> 1;
    const a = values[lo]!;
    const b = values[mid]!;
    const c = values[hi]!;
    const pivot = a < b ? (b < c ? b : a < c ? c : a) : a < c ? a : b < c ? c : b;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (values[i]! < pivot) i++;
      while (values[j]! > pivot) j--;
      if (i <= j) {
        const t = values[i]!;
        values[i++] = values[j]!;
        values[j--] = t;
      }
    }
    // Now values[lo..j] <= pivot <= values[i..hi], and values strictly between j and i equal pivot.
    if (index <= j) hi = j;
    else if (index >= i) lo = i;
    else return values[index]!;
  }
  return values[lo]!;
}

/**
 * Score order that treats scores within rounding of each other as equal, so that ties go to the
 * older row as in FTS5's `ORDER BY rank` (the JavaScript sum can differ from FTS5's in the last bits).
 */
export function byScore(a: number, b: number): number {
  return Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(a)) ? 0 : a - b;
}

/** FTS5's IDF: ln((N − n + 0.5) / (n + 0.5)), floored at 1e-6. */
export function idf(rows: number, df: number): number {
  const value = Math.log((rows - df + 0.5) / (df + 0.5));
  return value > 0 ? value : 1e-6;
}

/** SQLite varints (big-endian groups of 7 bits; the 9th byte carries 8) as used in FTS5 records. */
export function readVarints(buf: Uint8Array): number[] {
  const out: number[] = [];
  let i = 0;
  while (i < buf.length) {
    let value = 0;
    for (let n = 0; i < buf.length; n++) {
      const byte = buf[i++]!;
      if (n === 8) {
        value = value * 256 + byte;
        break;
      }
      value = value * 128 + (byte & 0x7f);
      if ((byte & 0x80) === 0) break;
    }
    out.push(value);
  }
  return out;
}

export function sumVarints(buf: Uint8Array): number {
  return readVarints(buf).reduce((sum, n) => sum + n, 0);
}

/** The sum of the varints of a record given as SQL's `hex()` of it (two hex digits per byte). */
export function sumHexVarints(hex: string): number {
  let sum = 0;
  let value = 0;
  let n = 0;
  for (let i = 0; i + 1 < hex.length; i += 2) {
    const byte = (hexDigit(hex.charCodeAt(i)) << 4) | hexDigit(hex.charCodeAt(i + 1));
    if (n === 8) {
      sum += value * 256 + byte;
      value = 0;
      n = 0;
      continue;
    }
    value = value * 128 + (byte & 0x7f);
    n++;
    if ((byte & 0x80) === 0) {
      sum += value;
      value = 0;
      n = 0;
    }
  }
  return sum + value;
}

function hexDigit(code: number): number {
  // '0'–'9' are 48–57, 'A'–'F' 65–70 (SQL's hex() writes upper case), 'a'–'f' 97–102.
  return code <= 57 ? code - 48 : (code | 0x20) - 87;
}

/** BM25's length normalisation of a row: k1 · (1 − b + b · length / average length). */
export function normOf(length: number, avgLength: number): number {
  return K1 * (1 - B + (B * length) / (avgLength || 1));
}

const SUFFIXES = ["ings", "ing", "ed", "es", "s", "ly"];

/**
 * A case- and accent-insensitive pattern for the forms of `term` the porter tokenizer would mostly
 * fold together: the word minus one common suffix, plus any of those suffixes.
 */
export function termPattern(term: string): RegExp {
  return new RegExp(`(?<![\\p{L}\\p{N}\\p{M}])${escapeRegExp(plainBase(term))}(?:${SUFFIXES.join("|")})?(?![\\p{L}\\p{N}\\p{M}])`, "giu");
}

/**
 * Counts one word's occurrences in text by `termPattern`'s rule. Plain-ASCII text is searched with
 * `countAsciiWord` when the word's base is plain ASCII too; other text with the word's patterns,
 * compiled on first need only: a word's two patterns, with Unicode property classes, take about
 * 14 kB of heap and cost more to compile than to run, so they are neither compiled for every
 * ranking nor for words that only ever meet ASCII text.
 */
export class WordCounter {
  private readonly base: string;
  /** The base when it is plain ASCII, else `null`. */
  private readonly asciiBase: string | null;
  private pattern: RegExp | undefined;
  /** The base alone (no word boundaries): a cheap test before `pattern`. */
  private probe: RegExp | undefined;

  constructor(private readonly term: string) {
    this.base = plainBase(term);
    this.asciiBase = NOT_ASCII.test(this.base) ? null : this.base;
  }

  count({ text, lower }: CountText): number {
    // An empty base (a word of combining marks only) would match empty strings, on which a global
    // pattern never advances: it is found nowhere.
    if (text.length === 0 || this.base === "") return 0;
    if (lower !== null && this.asciiBase !== null) return countAsciiWord(lower, this.asciiBase);
    this.probe ??= new RegExp(escapeRegExp(this.base), "iu");
    // Most rows lack most words: a plain search for the base rules them out far faster than the pattern.
    if (!this.probe.test(text)) return 0;
    this.pattern ??= termPattern(this.term);
    this.pattern.lastIndex = 0;
    let n = 0;
    while (this.pattern.exec(text) !== null) n++;
    return n;
  }
}

/** Counters of the words of recent rankings (most recently used last), so a word's patterns are compiled once while it is in use. */
const countersKept = new Map<string, WordCounter>();
/** Words whose counters are kept: a ranking uses at most `MAX_LAYERED_TERMS` (the layered ranker's), and a word's compiled patterns take about 14 kB. */
const COUNTERS_KEPT = 256;

export function wordCounter(term: string): WordCounter {
  let counter = countersKept.get(term);
  if (counter !== undefined) {
    countersKept.delete(term);
  } else {
    counter = new WordCounter(term);
    if (countersKept.size >= COUNTERS_KEPT) countersKept.delete(countersKept.keys().next().value!);
  }
  countersKept.set(term, counter);
  return counter;
}

/** `term` lower-cased, folded and without one common suffix. */
function plainBase(term: string): string {
  let base = foldDiacritics(term.toLowerCase());
  for (const suffix of SUFFIXES) {
    if (base.length > suffix.length + 2 && base.endsWith(suffix) && !(suffix === "s" && base.endsWith("ss"))) {
      base = base.slice(0, -suffix.length);
      break;
    }
  }
  return base;
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

function foldDiacritics(text: string): string {
  return text.normalize("NFD").replace(/\p{M}/gu, "");
}

/** A character outside ASCII. */
const NOT_ASCII = /[\u0080-\uffff]/;

/**
 * `text` made ready to count words in: diacritics are folded only when present (normalising every
 * row would double the scoring cost), and a text that is then plain ASCII is also lower-cased, so
 * that ruling a word out is a substring search.
 */
export function countText(value: unknown): CountText {
  // A column read from SQLite may hold a number or a blob where text is expected: count in its text form.
  const text = typeof value === "string" ? value : value == null ? "" : String(value);
  if (!NOT_ASCII.test(text)) return { text, lower: text.toLowerCase() };
  const folded = /[^\u0020-\u007e\s]/.test(text) ? foldDiacritics(text) : text;
  return { text: folded, lower: NOT_ASCII.test(folded) ? null : folded.toLowerCase() };
}

/**
 * `termPattern`'s count for a plain-ASCII, lower-cased text and a non-empty plain-ASCII base,
 * without a regular expression: an occurrence of the base counts when no letter or digit precedes
 * it and the letters and digits that follow it, if any, are exactly one of the suffixes. Counting
 * goes on after the counted word, or one character after an occurrence that did not count.
 */
export function countAsciiWord(lower: string, base: string): number {
  let n = 0;
  for (let at = lower.indexOf(base); at >= 0;) {
    const end = at + base.length;
    if (at > 0 && isAsciiWordChar(lower.charCodeAt(at - 1))) {
      at = lower.indexOf(base, at + 1);
      continue;
    }
    let after = end;
    while (after < lower.length && isAsciiWordChar(lower.charCodeAt(after))) after++;
    if (after === end || (after - end <= 4 && SUFFIXES.includes(lower.slice(end, after)))) {
      n++;
      at = lower.indexOf(base, after);
    } else {
      at = lower.indexOf(base, at + 1);
    }
  }
  return n;
}

/** A lower-case ASCII letter or a digit (in lower-cased ASCII text, what `\p{L}`, `\p{N}` and `\p{M}` match). */
function isAsciiWordChar(code: number): boolean {
  return (code >= 97 && code <= 122) || (code >= 48 && code <= 57);
}
