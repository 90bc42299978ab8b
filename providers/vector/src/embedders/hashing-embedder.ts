import { HermesMemoryError } from "@hermes/memory-core";
import { l2Normalize, type Embedder } from "./embedder.js";
import { MAX_DIMENSIONS } from "../vector-config.js";

/** Options of {@link HashingEmbedder}. */
export interface HashingEmbedderOptions {
  /** Vector length (default 384). */
  dimensions?: number;
}

const WORD_PATTERN = /[\p{L}\p{N}]+/gu;
const UNIGRAM_WEIGHT = 1;
const BIGRAM_WEIGHT = 0.7;
const CHAR_GRAM_WEIGHT = 0.35;
const CHAR_GRAM_SIZES = [3, 4] as const;

/** 32-bit FNV-1a over UTF-16 code units: tiny, fast and identical on every machine. */
function fnv1a(text: string, seed: number): number {
  let hash = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/**
 * The default, offline embedder: signed feature hashing of word unigrams, word bigrams and
 * character 3/4-grams (within words), each weighted by `1 + ln(tf)`, then L2-normalised.
 * Deterministic across runs and machines; no model, no network. It captures lexical overlap and
 * spelling variants, not meaning: use `openai` or `onnx` for semantic recall.
 */
export class HashingEmbedder implements Embedder {
  readonly id: string;
  readonly dimensions: number;

  constructor(options: HashingEmbedderOptions = {}) {
    const dimensions = options.dimensions ?? 384;
    if (!Number.isInteger(dimensions) || dimensions < 8 || dimensions > MAX_DIMENSIONS) {
      throw new HermesMemoryError({
        code: "INVALID_CONFIG",
        message: `Hashing embedder dimensions must be an integer from 8 to ${MAX_DIMENSIONS} (got ${String(dimensions)}). Set memory.vector.dimensions to e.g. 384.`,
      });
    }
    this.dimensions = dimensions;
    this.id = `hashing-v1`;
  }

  /** Embed synchronously (the async `embed` wraps this). */
  embedSync(text: string): Float32Array {
    const counts = new Map<string, number>();
    const add = (feature: string, weight: number): void => {
      counts.set(feature, (counts.get(feature) ?? 0) + weight);
    };
    const words = text.normalize("NFKC").toLowerCase().match(WORD_PATTERN) ?? [];
    for (let i = 0; i < words.length; i++) {
      const word = words[i]!;
      add(`w:${word}`, UNIGRAM_WEIGHT);
      if (i + 1 < words.length) add(`b:${word} ${words[i + 1]!}`, BIGRAM_WEIGHT);
      const padded = `^${word}$`;
      for (const n of CHAR_GRAM_SIZES) {
        for (let j = 0; j + n <= padded.length; j++) add(`c:${padded.slice(j, j + n)}`, CHAR_GRAM_WEIGHT);
      }
    }
    const vector = new Float32Array(this.dimensions);
    for (const [feature, weight] of counts) {
      // Sublinear term weight: repeated words matter, but not linearly. Weights are scaled counts,
      // so divide the per-kind weight back out before taking the log.
      const base = feature.startsWith("w:") ? UNIGRAM_WEIGHT : feature.startsWith("b:") ? BIGRAM_WEIGHT : CHAR_GRAM_WEIGHT;
      const tf = weight / base;
      const value = base * (1 + Math.log(tf));
      const h = fnv1a(feature, 0);
      const sign = fnv1a(feature, 0x9e3779b9) & 1 ? 1 : -1;
      const slot = h % this.dimensions;
      vector[slot] = vector[slot]! + sign * value;
    }
    return l2Normalize(vector);
  }

  /** Embed a batch. Never touches the network; resolves immediately. */
  async embed(texts: string[]): Promise<Float32Array[]> {
    return texts.map((t) => this.embedSync(t));
  }
}
