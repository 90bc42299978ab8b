import { l2Normalize, type Embedder } from "../embedders/embedder.js";

/**
 * A deterministic "semantic" embedder for tests: words of one concept (vehicles, dogs, the sea,
 * food) share an axis, so "automobile" is close to "sedan" without sharing a word; every other
 * word lands weakly on one of four spare axes. Lets a test tell meaning (dense) from keywords
 * (sparse) apart without a model.
 */
const CONCEPTS: Record<string, number> = {};
const GROUPS = [
  ["car", "cars", "automobile", "automobiles", "vehicle", "sedan", "drive", "driving"],
  ["dog", "dogs", "puppy", "hound", "canine"],
  ["ocean", "sea", "sailing", "boat", "harbour", "ship"],
  ["food", "pizza", "pasta", "dinner", "lunch"],
];
GROUPS.forEach((words, axis) => words.forEach((w) => (CONCEPTS[w] = axis)));

export const CONCEPT_DIMENSIONS = 8;

export class ConceptEmbedder implements Embedder {
  readonly id = "test-concepts-v1";
  readonly dimensions = CONCEPT_DIMENSIONS;

  async embed(texts: string[]): Promise<Float32Array[]> {
    return texts.map((text) => {
      const v = new Float32Array(CONCEPT_DIMENSIONS);
      for (const word of text.toLowerCase().match(/[a-z]+/g) ?? []) {
        const axis = CONCEPTS[word];
        if (axis !== undefined) v[axis] = v[axis]! + 1;
        else v[4 + (word.length % 4)] = v[4 + (word.length % 4)]! + 0.05;
      }
      if (v.every((x) => x === 0)) v[4] = 1;
      return l2Normalize(v);
    });
  }
}
