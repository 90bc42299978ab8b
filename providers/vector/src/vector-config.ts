import fs from "node:fs";
import { HermesMemoryError, configFilePath, parseConfig, readConfig, readEnvFileSync } from "@hermes/memory-core";

/** Which store holds the vectors. */
export type StoreKind = "local" | "pinecone";
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
  /** Namespace template; `{profile}` and `{user}` are replaced. Default `{profile}:{user}`. */
  pineconeNamespaceTemplate: string;
  pineconeApiKey?: string;
  embeddingsBaseUrl: string;
  embeddingsModel: string;
  embeddingsApiKey?: string;
  onnxModelDir?: string;
  /** Fuse vector similarity with BM25, conversational context and speaker boost (default on); false = pure vector search. */
  hybrid: boolean;
  /** Local store: namespaces up to this size are searched exactly (default 10000). */
  exactThreshold: number;
  /** Character budget of `prefetch` output (default 3000). */
  prefetchChars: number;
  /** Time budget of a `prefetch` call, retries included (default 2000 ms). */
  prefetchTimeoutMs: number;
  /** Per-request timeout for Pinecone and embedding endpoints (default 10000 ms). */
  requestTimeoutMs: number;
  /** Retries on 429/5xx/timeouts (default 4). */
  maxRetries: number;
}

/** Defaults for every key. */
export const DEFAULT_VECTOR_CONFIG: VectorConfig = {
  store: "local",
  embedder: "hashing",
  dimensions: 384,
  pineconeIndex: "hermes-memory",
  pineconeNamespaceTemplate: "{profile}:{user}",
  embeddingsBaseUrl: "https://api.openai.com/v1",
  embeddingsModel: "text-embedding-3-small",
  hybrid: true,
  exactThreshold: 10_000,
  prefetchChars: 3000,
  prefetchTimeoutMs: 2000,
  requestTimeoutMs: 10_000,
  maxRetries: 4,
};

function text(value: unknown): string | undefined {
  if (typeof value === "string" && value.trim() !== "") return value.trim();
  if (typeof value === "number") return String(value);
  return undefined;
}

function integer(value: unknown, key: string, min: number): number | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  const n = typeof value === "string" ? Number(value) : value;
  if (typeof n !== "number" || !Number.isFinite(n) || Math.floor(n) !== n || n < min) {
    throw new HermesMemoryError({
      code: "INVALID_CONFIG",
      message: `memory.vector.${key} must be an integer >= ${min} (got ${JSON.stringify(value)}). Fix it in config.yaml.`,
    });
  }
  return n;
}

function bool(value: unknown): boolean | undefined {
  if (value === undefined || value === null || value === "") return undefined;
  if (typeof value === "boolean") return value;
  return ["1", "true", "yes", "on"].includes(String(value).trim().toLowerCase());
}

function choice<T extends string>(value: unknown, key: string, allowed: readonly T[]): T | undefined {
  const v = text(value)?.toLowerCase();
  if (v === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(v)) {
    throw new HermesMemoryError({
      code: "INVALID_CONFIG",
      message: `memory.vector.${key} must be one of ${allowed.join(", ")} (got ${JSON.stringify(value)}). Fix it in config.yaml or run \`hermes-memory memory setup vector\`.`,
    });
  }
  return v as T;
}

function defined<T extends object>(obj: T): Partial<T> {
  return Object.fromEntries(Object.entries(obj).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * Merge, in increasing precedence: defaults, the `memory.vector` section of config.yaml
 * (snake_case keys), secrets from the environment, and constructor options (camelCase).
 * Throws `INVALID_CONFIG` for a value of the wrong type or outside its choices.
 */
export function resolveVectorConfig(
  section: Record<string, unknown>,
  secrets: Record<string, string | undefined>,
  overrides: Partial<VectorConfig> = {},
): VectorConfig {
  const fromFile: Partial<VectorConfig> = defined({
    store: choice(section.store, "store", ["local", "pinecone"] as const),
    embedder: choice(section.embedder, "embedder", ["hashing", "openai", "onnx"] as const),
    dimensions: integer(section.dimensions, "dimensions", 1),
    pineconeIndex: text(section.pinecone_index),
    pineconeHost: text(section.pinecone_host),
    pineconeControllerUrl: text(section.pinecone_controller_url),
    pineconeNamespaceTemplate: text(section.pinecone_namespace_template),
    embeddingsBaseUrl: text(section.embeddings_base_url),
    embeddingsModel: text(section.embeddings_model),
    onnxModelDir: text(section.onnx_model_dir),
    hybrid: bool(section.hybrid),
    exactThreshold: integer(section.exact_threshold, "exact_threshold", 0),
    prefetchChars: integer(section.prefetch_chars, "prefetch_chars", 0),
    prefetchTimeoutMs: integer(section.prefetch_timeout_ms, "prefetch_timeout_ms", 1),
    requestTimeoutMs: integer(section.request_timeout_ms, "request_timeout_ms", 1),
    maxRetries: integer(section.max_retries, "max_retries", 0),
  });
  const fromEnv: Partial<VectorConfig> = defined({
    pineconeApiKey: text(secrets.PINECONE_API_KEY),
    embeddingsApiKey: text(secrets.EMBEDDINGS_API_KEY),
  });
  return { ...DEFAULT_VECTOR_CONFIG, ...fromFile, ...fromEnv, ...defined(overrides) };
}

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
): Promise<VectorConfig> {
  const section = (await readConfig(hermesHome)).memory.providerConfig("vector");
  return resolveVectorConfig(section, { ...env, ...readEnvFileSync(hermesHome) }, overrides);
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
): VectorConfig {
  const file = configFilePath(hermesHome);
  const section = parseConfig(readIfExists(file), file).memory.providerConfig("vector");
  return resolveVectorConfig(section, { ...env, ...readEnvFileSync(hermesHome) }, overrides);
}

/** Replace `{profile}` and `{user}` in the namespace template; characters Pinecone dislikes become `_`. */
export function renderNamespace(template: string, profile: string, user: string): string {
  const clean = (s: string): string => s.replace(/[^A-Za-z0-9._:@-]/g, "_");
  return template.replace(/\{profile\}/g, clean(profile)).replace(/\{user\}/g, clean(user));
}
