import fs from "node:fs";
import { describe, expect, it } from "vitest";
import * as vector from "./index.js";
import * as internal from "./internal.js";

// The public surface is a contract: adding, removing or renaming an export must be a deliberate
// change made here and in the changeset, never a side effect of editing a module.
describe("@hermes/memory-vector exports", () => {
  it("exports exactly these values from the main entry", () => {
    expect(Object.keys(vector).sort()).toEqual([
      "DEFAULT_EMBED_INPUT_CHARS",
      "DEFAULT_VECTOR_CONFIG",
      "HashingEmbedder",
      "MAX_DIMENSIONS",
      "OnnxEmbedder",
      "OpenAIEmbedder",
      "VectorMemoryProvider",
      "loadVectorConfig",
      "register",
      "resolveVectorConfig",
    ]);
  });

  it("keeps the stores, the sidecar and the tokenizer off the main entry", () => {
    for (const name of [
      "Sidecar",
      "LocalVectorStore",
      "PineconeVectorStore",
      "PineconeRemoteMemory",
      "WordPieceTokenizer",
      "matchesFilter",
      "matchesMetadataFilter",
      "toFtsQuery",
    ]) {
      expect(Object.keys(vector)).not.toContain(name);
    }
  });

  it("exports exactly these values from the internal entry (the repository's benchmarks and packed-install tests)", () => {
    expect(Object.keys(internal).sort()).toEqual([
      "DEFAULT_EXACT_THRESHOLD",
      "DEFAULT_EXPANSION_SEARCH",
      "LEXICAL_EXACT_THRESHOLD",
      "LocalVectorStore",
    ]);
  });

  it("declares the main, cli and internal entries in package.json", () => {
    const manifest = JSON.parse(fs.readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
      exports: Record<string, unknown>;
    };
    expect(Object.keys(manifest.exports).sort()).toEqual([".", "./cli", "./internal", "./package.json"]);
  });
});
