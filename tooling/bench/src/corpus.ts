import { createRandom, type Random } from "./prng.js";

/**
 * Deterministic synthetic conversation text: English function words plus a Zipf(1.0)-distributed
 * content vocabulary of about 30k words (real words first, then pronounceable made-up ones), with turn lengths drawn
 * from a log-normal that roughly matches chat transcripts (users short, assistants longer).
 */

const FUNCTION_WORDS = (
  "the a an and or but if to of in on at for with about from by as is are was were be been it this that " +
  "these those i you we they he she my your our their me us them do does did have has had can could would " +
  "should will not no yes so then than just also what when where which who how why there here"
).split(" ");

const CONTENT_WORDS = (
  "project deadline meeting budget report database server deploy release bug feature customer invoice " +
  "schedule flight hotel dinner recipe garden painting guitar concert museum hiking camping bicycle marathon " +
  "doctor appointment medicine vacation birthday wedding anniversary gift puppy kitten school teacher exam " +
  "homework library novel poem movie series podcast album photo camera laptop phone keyboard monitor printer " +
  "kitchen oven coffee tea breakfast lunch salad soup pasta pizza sushi bakery market grocery apartment rent " +
  "mortgage salary interview promotion manager colleague team sprint backlog ticket migration postgres sqlite " +
  "index query cache latency memory storage backup restore password account login email calendar reminder " +
  "weather rain snow beach mountain lake river forest city village train bus airport passport visa museum " +
  "football tennis swimming yoga gym workout diet sleep stress therapy friend family sister brother mother " +
  "father grandmother cousin neighbor volunteer charity festival holiday christmas summer winter autumn spring " +
  "painting sculpture pottery knitting baking gardening photography astronomy chemistry physics history " +
  "language spanish french german japanese piano violin drums choir theater dance adoption career startup " +
  "investment savings insurance car repair mechanic garage electricity plumber renovation furniture sofa"
).split(" ");

const SYLLABLES = "ka lo mi ren tor vel sa qui dun bar fel gor hin jex lum nor pax ris sol tam ul vor wen yar zel".split(" ");

/** The bench's vocabulary, most frequent first (index 0 is the most common content word). */
export interface Vocabulary {
  functionWords: readonly string[];
  contentWords: readonly string[];
}

/** Builds the vocabulary: the real content words followed by `extra` made-up words. */
export function buildVocabulary(extra = 30_000, seed = 7): Vocabulary {
  const rnd = createRandom(seed);
  const seen = new Set<string>(CONTENT_WORDS);
  const made: string[] = [];
  // 2–4 of 24 syllables give ~346k distinct words, comfortably more than any `extra` used here.
  if (extra > 300_000) throw new RangeError("buildVocabulary: at most 300,000 made-up words");
  while (made.length < extra) {
    const n = 2 + rnd.int(3);
    let w = "";
    for (let i = 0; i < n; i++) w += rnd.pick(SYLLABLES);
    if (!seen.has(w)) {
      seen.add(w);
      made.push(w);
    }
  }
  return { functionWords: FUNCTION_WORDS, contentWords: [...new Set(CONTENT_WORDS)].concat(made) };
}

/** Samples ranks from a Zipf(s) distribution over `n` items using a precomputed CDF. */
export class ZipfSampler {
  private readonly cdf: Float64Array;

  constructor(n: number, s = 1.0) {
    this.cdf = new Float64Array(n);
    let sum = 0;
    for (let i = 0; i < n; i++) {
      sum += 1 / (i + 1) ** s;
      this.cdf[i] = sum;
    }
    for (let i = 0; i < n; i++) this.cdf[i] = (this.cdf[i] as number) / sum;
  }

  /** A rank in [0, n). */
  sample(rnd: Random): number {
    const u = rnd.next();
    let lo = 0;
    let hi = this.cdf.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.cdf[mid] as number) < u) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }
}

/** Generates turns and queries from one seed. */
export class CorpusGenerator {
  private readonly rnd: Random;
  private readonly zipf: ZipfSampler;

  constructor(
    seed: number,
    private readonly vocab: Vocabulary = buildVocabulary(),
  ) {
    this.rnd = createRandom(seed);
    this.zipf = new ZipfSampler(vocab.contentWords.length);
  }

  private words(count: number): string {
    const out: string[] = [];
    for (let i = 0; i < count; i++) {
      // About 45 % of running words in English chat are function words.
      out.push(
        this.rnd.next() < 0.45 ? this.rnd.pick(this.vocab.functionWords) : (this.vocab.contentWords[this.zipf.sample(this.rnd)] as string),
      );
    }
    const text = out.join(" ");
    return text.charAt(0).toUpperCase() + text.slice(1) + (this.rnd.next() < 0.3 ? "?" : ".");
  }

  private logNormalLength(median: number, sigma: number, min: number, max: number): number {
    return Math.max(min, Math.min(max, Math.round(median * Math.exp(sigma * this.rnd.gaussian()))));
  }

  /** A user message: median 14 words, 3–80. */
  userTurn(): string {
    return this.words(this.logNormalLength(14, 0.6, 3, 80));
  }

  /** An assistant message: median 45 words, 8–300. */
  assistantTurn(): string {
    return this.words(this.logNormalLength(45, 0.7, 8, 300));
  }

  /**
   * A search query: a question with 2–4 content words whose frequency ranks are log-uniform in
   * [50, 5000], i.e. topic words found in roughly 0.05–6 % of turns (median about 0.6 %), not the
   * most common words of the corpus. The suite reports how many rows the queries actually match.
   */
  query(): string {
    const n = 2 + this.rnd.int(3);
    const content: string[] = [];
    const lo = Math.log(50);
    const hi = Math.log(Math.min(5000, this.vocab.contentWords.length - 1));
    for (let i = 0; i < n; i++) {
      const rank = Math.floor(Math.exp(lo + this.rnd.next() * (hi - lo)));
      content.push(this.vocab.contentWords[rank] as string);
    }
    const lead = this.rnd.pick(["what did we say about", "when was the", "do you remember the", "how did my", "where is the"]);
    return `${lead} ${content.join(" ")}?`;
  }
}
