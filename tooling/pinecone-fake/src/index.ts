/**
 * Test support for code that talks to Pinecone through the real SDK: a loopback server speaking
 * Pinecone's REST protocol, with its own evaluator of Pinecone's metadata filters. Private to the
 * repository (the vector provider's tests and pnpm test:chaos); never published.
 */
export {
  PineconeFake,
  type FakeIndex,
  type FakeMetric,
  type FakeRequest,
  type FakeSparseValues,
  type PineconeFakeOptions,
  type StoredVector,
} from "./pinecone-fake.js";
export { pineconeFilterMatches, type FakeMetadata, type FakeMetadataValue } from "./filter.js";
