/**
 * The corpus and filter shapes of the `filtered` suite: seeded chat text where every item carries a
 * user, a tag and metadata, and four filter shapes that each pass 1 % of the items. Which items pass
 * a shape is known from the item's index alone (the createdAt shape from a window of indexes whose
 * times are read back from the provider), so the exact filtered ranking needs no help from the
 * provider under test.
 */
import type { MemoryFilter, MemoryItem } from "@hermes/memory-core";
import { CorpusGenerator } from "./corpus.js";

/** The user every item belongs to unless it is one of the 1 % of `OTHER_USER`. */
export const OWNER_USER = "bench-owner";
/** The user of 1 % of the items (index ≡ 37 mod 100). */
export const OTHER_USER = "bench-user-b";

/** How an item's index decides its user, project and tag. */
const USER_RESIDUE = 37;
const PROJECT_RESIDUE = 11;
const TAG_VALUE = 52;

/** The tag of item `i`: `tag-<(7i + 3) mod 100>`; `tag-52` is on the items with i ≡ 7 (mod 100). */
export function tagOf(i: number): string {
  return `tag-${(i * 7 + 3) % 100}`;
}

/** The user of item `i`. */
export function userOf(i: number): string {
  return i % 100 === USER_RESIDUE ? OTHER_USER : OWNER_USER;
}

/** Item `i` of the corpus; its text is the next one `gen` generates, so call it in index order. */
export function filteredItem(gen: CorpusGenerator, i: number): MemoryItem {
  return {
    content: gen.assistantTurn(),
    kind: "fact",
    userId: userOf(i),
    tags: [tagOf(i)],
    metadata: { project: `project-${i % 100}`, n: i },
  };
}

/** The texts of a corpus of `size` items from `seed`, in index order (the same as `filteredItem` writes). */
export function filteredTexts(seed: number, size: number): string[] {
  const gen = new CorpusGenerator(seed);
  return Array.from({ length: size }, (_, i) => filteredItem(gen, i).content);
}

/** The items of the createdAt shape: a contiguous window of indexes and the times bounding it. */
export interface CreatedAtWindow {
  /** First index of the window (1 % of the corpus, in its middle). */
  first: number;
  /** Last index of the window, inclusive. */
  last: number;
  /** Creation time of item `first` and of item `last`, ISO 8601 as the provider returned them. */
  from?: string;
  to?: string;
  /** Indexes whose creation time lies in [from, to] (read back from the provider). */
  passing?: ReadonlySet<number>;
}

/** The window of the createdAt shape in a corpus of `size` items. */
export function createdAtWindow(size: number): CreatedAtWindow {
  const count = Math.max(1, Math.round(size / 100));
  const first = Math.floor(size / 2);
  return { first, last: first + count - 1 };
}

/** One filter shape: its filter and which item indexes pass it. */
export interface FilterShape {
  name: string;
  /** What the shape selects, for the report. */
  describe: string;
  filter(window: CreatedAtWindow): MemoryFilter;
  passes(i: number, window: CreatedAtWindow): boolean;
}

/** The four shapes, each passing 1 % of the items. */
export const FILTER_SHAPES: readonly FilterShape[] = [
  {
    name: "userId",
    describe: `userId = ${OTHER_USER} (the items with index ≡ ${USER_RESIDUE} mod 100)`,
    filter: () => ({ userId: OTHER_USER }),
    passes: (i) => i % 100 === USER_RESIDUE,
  },
  {
    name: "metadata",
    describe: `metadata.project = project-${PROJECT_RESIDUE}`,
    filter: () => ({ metadata: { project: `project-${PROJECT_RESIDUE}` } }),
    passes: (i) => i % 100 === PROJECT_RESIDUE,
  },
  {
    name: "tag",
    describe: `tags any of [tag-${TAG_VALUE}]`,
    filter: () => ({ tags: { any: [`tag-${TAG_VALUE}`] } }),
    passes: (i) => tagOf(i) === `tag-${TAG_VALUE}`,
  },
  {
    name: "createdAt",
    describe: "createdAt between the creation times of two items 1 % of the corpus apart",
    filter: (w) => {
      if (!w.from || !w.to) throw new Error("the createdAt window has not been read back from the provider");
      return { createdAt: { $gte: w.from, $lte: w.to } };
    },
    passes: (i, w) => (w.passing ? w.passing.has(i) : i >= w.first && i <= w.last),
  },
];
