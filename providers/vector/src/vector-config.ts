import fs from "node:fs";
import { configFilePath, parseConfig, readConfig, readEnvFileSync, resolveProviderConfig, type ConfigField } from "@hermes/memory-core";
import { applyRenamedSettings, PREFETCH_CONFIG_FIELDS, type RenamedSetting } from "@hermes/memory-provider-kit";

/** Which store holds the vectors. */
export type StoreKind = "local" | "pinecone";
/** Where a Pinecone-backed memory keeps text, metadata and the keyword index: a local SQLite sidecar per machine, or Pinecone itself. */
export type PineconeLayout = "sidecar" | "remote";
/** Which embedder turns text into vectors. */
export type EmbedderKind = "hashing" | "openai" | "onnx";

/** The resolved provider configuration (defaults applied). */
export interface VectorConfig {
  store: StoreKind;
  embedder: EmbedderKind;
  /** Vector length (hashing: any; openai: sent as `dimensions`; onnx: the model's output size). */
  dimensions: number;
  pineconeIndex: string;
  /** Optional data-plane host (skips the control-plane lookup). Include the scheme. */
  pineconeHost?: string;
  /** Optional control-plane URL (default Pinecone's). Include the scheme. */
  pineconeControllerUrl?: string;
  /** `sidecar` (default): text and BM25 in a local SQLite sidecar, vectors in Pinecone. `remote`: everything in Pinecone (sparse–dense, dotproduct index), shared by every machine. */
  pineconeLayout: PineconeLayout;
  /** Remote layout: weight of the dense (meaning) part of a search, 0..1; keywords weigh 1 − alpha (default 0.5). */
  hybridAlpha: number;
  /** Remote layout: the namespace every machine shares (default: the profile's `agentIdentity`). */
  pineconeNamespace?: string;
  /** Namespace template; `{profile}` and `{user}` are replaced. Default `{profile}:{user}`. */
  pineconeNamespaceTemplate: string;
  pineconeApiKey?: string;
  embeddingsBaseUrl: string;
  embeddingsModel: string;
  embeddingsApiKey?: string;
  onnxModelDir?: string;
  /** Fuse vector similarity with BM25, conversational context and speaker boost (default on); false = pure vector search. */
  hybrid: boolean;
  /**
   * Local store: namespaces up to this size are searched exactly, larger ones through the HNSW
   * graph. Unset: 500000 with the lexical `hashing` embedder (a graph over its vectors finds few
   * true neighbours), 10000 with any other (`defaultExactThreshold`).
   */
  exactThreshold?: number;
  /** Memories `prefetch` recalls before each turn (default 5). */
  prefetchLimit: number;
  /** Character budget of `prefetch` output (default 2000). */
  prefetchMaxChars: number;
  /** Time budget of a `prefetch` call, retries included (default 2000 ms). */
  prefetchTimeoutMs: number;
  /** Per-request timeout for Pinecone and embedding endpoints (default 10000 ms). */
  requestTimeoutMs: number;
  /** Retries on 429/5xx/timeouts (default 4). */
  maxRetries: number;
  /** Read part of a large sidecar's keyword searches on a second thread (default true; see `LayeredRanker`'s pool helper). */
  searchThread: boolean;
  /** Items per background embedding/write batch (default 32). */
  writeBatchSize: number;
}

/**
 * Most dimensions a vector may have: Pinecone's own limit. Every stored vector and every query
 * allocates this many floats, so a larger value (a typo, a hostile config) would exhaust memory.
 */
export const MAX_DIMENSIONS = 20_000;

/**
 * Most retries of one request. Backoff doubles per retry, so ten already wait minutes on a
 * Pinecone or embeddings endpoint that keeps failing; more would hold a write or a search for hours.
 */
export const MAX_RETRIES = 10;

/**
 * Largest namespace searched exactly. An exact search reads every vector of the namespace on each
 * query; past ten million that takes seconds per search, which is what the HNSW graph is for.
 */
export const MAX_EXACT_THRESHOLD = 10_000_000;

/**
 * Every `memory.vector.*` setting, declared once: the setup form (`getConfigSchema()`) and the
 * runtime config (`resolveVectorConfig`) both come from this list, so each default, bound and
 * choice exists only here. Every number has a range (`minimum`..`maximum`); a value outside it is
 * refused with `INVALID_CONFIG`, never clamped. Secrets (`secret: true`) are read only from their `envVar` (or an
 * explicit option), never from config.yaml. `advanced` fields are not asked by setup but are
 * read, defaulted and validated at runtime. `when` only decides what setup asks and when a
 * `required` field is needed; a field whose `when` does not match still gets its default.
 */
export const VECTOR_CONFIG_FIELDS = [
  { key: "store", description: "Where vectors live", choices: ["local", "pinecone"], default: "local" },
  { key: "embedder", description: "Embedding model", choices: ["hashing", "openai", "onnx"], default: "hashing" },
  { key: "dimensions", description: "Vector dimensions", type: "integer", default: 384, minimum: 1, maximum: MAX_DIMENSIONS },
  { key: "pinecone_index", description: "Pinecone index name", type: "text", default: "hermes-memory", when: { store: "pinecone" } },
  {
    key: "pinecone_layout",
    description: "Pinecone layout: sidecar (text and keyword index local) or remote (everything in Pinecone, shared across machines)",
    choices: ["sidecar", "remote"],
    default: "sidecar",
    when: { store: "pinecone" },
  },
  {
    key: "pinecone_namespace",
    description: "Remote layout: namespace shared by every machine (default: the agent identity)",
    type: "text",
    advanced: true,
  },
  {
    key: "hybrid_alpha",
    description: "Remote layout: weight of meaning vs keywords in search (0 = keywords only, 1 = meaning only)",
    type: "number",
    default: 0.5,
    minimum: 0,
    maximum: 1,
    advanced: true,
  },
  {
    key: "pinecone_namespace_template",
    description: "Pinecone namespace ({profile}, {user})",
    type: "text",
    default: "{profile}:{user}",
    when: { store: "pinecone" },
  },
  {
    key: "pinecone_api_key",
    description: "Pinecone API key",
    secret: true,
    required: true,
    envVar: "PINECONE_API_KEY",
    url: "https://app.pinecone.io",
    when: { store: "pinecone" },
  },
  {
    key: "pinecone_host",
    description: "Pinecone data-plane host, with https:// (skips the control-plane lookup)",
    type: "text",
    advanced: true,
  },
  { key: "pinecone_controller_url", description: "Pinecone control-plane URL, with scheme", type: "url", advanced: true },
  {
    key: "embeddings_base_url",
    description: "OpenAI-compatible embeddings base URL",
    type: "url",
    default: "https://api.openai.com/v1",
    when: { embedder: "openai" },
  },
  {
    key: "embeddings_model",
    description: "Embeddings model",
    type: "text",
    default: "text-embedding-3-small",
    when: { embedder: "openai" },
  },
  {
    key: "embeddings_api_key",
    description: "Embeddings API key (blank for local servers)",
    secret: true,
    envVar: "EMBEDDINGS_API_KEY",
    url: "https://platform.openai.com/api-keys",
    when: { embedder: "openai" },
  },
  { key: "onnx_model_dir", description: "Local ONNX sentence-embedding model directory", type: "text", when: { embedder: "onnx" } },
  { key: "hybrid", description: "Fuse vector and BM25 keyword ranking", type: "boolean", default: true },
  {
    key: "exact_threshold",
    description:
      "Local store: namespaces up to this size are searched exactly (default 100000 with the hashing embedder, 10000 with others)",
    type: "integer",
    minimum: 0,
    maximum: MAX_EXACT_THRESHOLD,
    advanced: true,
  },
  ...PREFETCH_CONFIG_FIELDS,
  {
    key: "prefetch_timeout_ms",
    description: "Time budget of one prefetch, retries included (ms)",
    type: "integer",
    default: 2000,
    minimum: 1,
    maximum: 60_000,
    advanced: true,
  },
  {
    key: "request_timeout_ms",
    description: "Per-request timeout of Pinecone and the embeddings endpoint (ms)",
    type: "integer",
    default: 10_000,
    minimum: 1,
    maximum: 600_000,
    advanced: true,
  },
  {
    key: "max_retries",
    description: "Retries on 429 / 5xx / timeouts",
    type: "integer",
    default: 4,
    minimum: 0,
    maximum: MAX_RETRIES,
    advanced: true,
  },
  {
    key: "search_thread",
    description: "Read part of a large sidecar's keyword searches on a second thread (200,000 items or more)",
    type: "boolean",
    default: true,
    advanced: true,
  },
  {
    key: "write_batch_size",
    description: "Items per background embedding and write batch",
    type: "integer",
    default: 32,
    minimum: 1,
    maximum: 1000,
    advanced: true,
  },
] as const satisfies readonly ConfigField[];

/**
 * Keys read under their current name: `prefetch_chars` is `prefetch_max_chars` (the name every
 * provider uses). An old key is read with a warning; both at once are refused.
 */
export const RENAMED_VECTOR_SETTINGS: readonly RenamedSetting[] = [{ from: "prefetch_chars", to: "prefetch_max_chars" }];

/**
 * Merge, in decreasing precedence: constructor options (camelCase), the `memory.vector` section
 * of config.yaml (snake_case keys; secrets there are ignored), secrets and other `envVar`s from
 * `secrets`, then the declared defaults. Throws `INVALID_CONFIG` naming the key, the value, where
 * it came from and the fix. A missing `PINECONE_API_KEY` is not an error here: `isAvailable()`
 * reports it. Unknown keys and ignored secrets go to `onWarning`.
 */
export function resolveVectorConfig(
  section: Record<string, unknown>,
  secrets: Record<string, string | undefined>,
  overrides: Partial<VectorConfig> = {},
  onWarning?: (message: string) => void,
): VectorConfig {
  return resolveFrom(section, undefined, secrets, overrides, onWarning);
}

function resolveFrom(
  section: Record<string, unknown>,
  configPath: string | undefined,
  secrets: Record<string, string | undefined>,
  overrides: Partial<VectorConfig>,
  onWarning: ((message: string) => void) | undefined,
): VectorConfig {
  const where = `memory.vector${configPath !== undefined ? ` in ${configPath}` : ""}`;
  const { config, warnings } = resolveProviderConfig(VECTOR_CONFIG_FIELDS, {
    provider: "vector",
    section: applyRenamedSettings(section, RENAMED_VECTOR_SETTINGS, { where, keys: "snake", warn: onWarning }),
    ...(configPath !== undefined ? { configPath } : {}),
    env: secrets,
    options: applyRenamedSettings(overrides, RENAMED_VECTOR_SETTINGS, {
      where: "the vector provider's options",
      keys: "camel",
      warn: onWarning,
    }),
    enforceRequired: false,
  });
  if (onWarning) for (const warning of warnings) onWarning(warning);
  return config;
}

/** Defaults for every key (what `resolveVectorConfig` gives with nothing configured). */
export const DEFAULT_VECTOR_CONFIG: VectorConfig = resolveVectorConfig({}, {});

/**
 * Load the provider's configuration for a profile through core's `readConfig` (the only reader
 * of config.yaml) and `readEnvFileSync` (core's one cached reader of `.env`, the same view
 * `getEnv()` gives providers). Secrets: `$HERMES_HOME/.env` wins over the process
 * environment, so each profile can carry its own keys.
 */
export async function loadVectorConfig(
  hermesHome: string,
  overrides: Partial<VectorConfig> = {},
  env: Record<string, string | undefined> = process.env,
  onWarning?: (message: string) => void,
): Promise<VectorConfig> {
  const section = (await readConfig(hermesHome)).memory.providerConfig("vector");
  return resolveFrom(section, configFilePath(hermesHome), { ...env, ...readEnvFileSync(hermesHome) }, overrides, onWarning);
}

function readIfExists(file: string): string {
  try {
    return fs.readFileSync(file, "utf8");
  } catch {
    return "";
  }
}

/**
 * Synchronous variant for `isAvailable()` before `initialize` (hosts ask it first): the same
 * files through core's `parseConfig` / `readEnvFileSync`. Throws `INVALID_CONFIG` like the async one.
 */
export function loadVectorConfigSync(
  hermesHome: string,
  overrides: Partial<VectorConfig> = {},
  env: Record<string, string | undefined> = process.env,
  onWarning?: (message: string) => void,
): VectorConfig {
  const file = configFilePath(hermesHome);
  const section = parseConfig(readIfExists(file), file).memory.providerConfig("vector");
  return resolveFrom(section, file, { ...env, ...readEnvFileSync(hermesHome) }, overrides, onWarning);
}

export { renderNamespace } from "./local/namespace-encoding.js";
