import fs from "node:fs";
import path from "node:path";
import { HermesMemoryError, describeError } from "@hermes/memory-core";
import { l2Normalize, type Embedder } from "./embedder.js";
import { WordPieceTokenizer } from "./wordpiece-tokenizer.js";

/** Options of {@link OnnxEmbedder.load}. */
export interface OnnxEmbedderOptions {
  /** Local model directory: `model.onnx` (or `onnx/model.onnx`, `*_quantized.onnx`) + `tokenizer.json`/`vocab.txt`. */
  modelDir: string;
  /** Expected output size; checked against the model (optional). */
  dimensions?: number;
  /** Tokens per text (default 256). */
  maxLength?: number;
  /** `mean` (default, sentence-transformers) or `cls` pooling of token embeddings. */
  pooling?: "mean" | "cls";
  /** Texts per inference run (default 16). */
  batchSize?: number;
}

type OrtModule = typeof import("onnxruntime-node");
type OrtSession = Awaited<ReturnType<OrtModule["InferenceSession"]["create"]>>;

const MODEL_CANDIDATES = ["model.onnx", "onnx/model.onnx", "model_quantized.onnx", "onnx/model_quantized.onnx"];

/** True when the optional peer `onnxruntime-node` can be resolved (no loading, no network). */
export function onnxRuntimeInstalled(resolve: (id: string) => string): boolean {
  try {
    resolve("onnxruntime-node");
    return true;
  } catch {
    return false;
  }
}

/** Find the ONNX file inside a model directory, or `null`. */
export function findOnnxModel(modelDir: string): string | null {
  for (const candidate of MODEL_CANDIDATES) {
    const file = path.join(modelDir, candidate);
    if (fs.existsSync(file)) return file;
  }
  return null;
}

/**
 * Sentence embeddings from a local ONNX model through the optional peer `onnxruntime-node`
 * (install it with `ONNXRUNTIME_NODE_INSTALL=skip`; nothing is downloaded, the model directory is
 * read from disk only). Feeds `input_ids`/`attention_mask`/`token_type_ids` (whichever the graph
 * declares), mean-pools the token embeddings under the attention mask (or takes `[CLS]`, or a
 * pooled 2-D output as is), and L2-normalises.
 */
export class OnnxEmbedder implements Embedder {
  readonly id: string;
  readonly dimensions: number;
  private readonly ort: OrtModule;
  private readonly session: OrtSession;
  private readonly tokenizer: WordPieceTokenizer;
  private readonly options: OnnxEmbedderOptions;

  private constructor(ort: OrtModule, session: OrtSession, tokenizer: WordPieceTokenizer, dimensions: number, options: OnnxEmbedderOptions) {
    this.ort = ort;
    this.session = session;
    this.tokenizer = tokenizer;
    this.dimensions = dimensions;
    this.options = options;
    this.id = `onnx:${path.basename(path.resolve(options.modelDir))}`;
  }

  /**
   * Load the model and tokenizer and probe the output size with one tiny inference. Throws
   * `PROVIDER_UNAVAILABLE` when onnxruntime-node is missing, `INVALID_CONFIG` for an unusable
   * directory, `EMBEDDING_DIMENSION_MISMATCH` when `dimensions` disagrees with the model.
   */
  static async load(options: OnnxEmbedderOptions): Promise<OnnxEmbedder> {
    let ort: OrtModule;
    try {
      ort = (await import("onnxruntime-node")) as OrtModule;
    } catch (error) {
      throw new HermesMemoryError({
        code: "PROVIDER_UNAVAILABLE",
        message: `The onnx embedder needs the optional package onnxruntime-node. Install it with \`ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node@1.30.0\` (${describeError(error)}).`,
        cause: error,
      });
    }
    const modelFile = findOnnxModel(options.modelDir);
    if (!modelFile) {
      throw new HermesMemoryError({
        code: "INVALID_CONFIG",
        message: `No ONNX model in ${options.modelDir} (looked for ${MODEL_CANDIDATES.join(", ")}). Point memory.vector.onnx_model_dir at a local sentence-embedding model exported to ONNX.`,
      });
    }
    const tokenizer = WordPieceTokenizer.fromDirectory(options.modelDir);
    const session = await ort.InferenceSession.create(modelFile, { graphOptimizationLevel: "all", intraOpNumThreads: 1 });
    const probe = new OnnxEmbedder(ort, session, tokenizer, 0, options);
    const [vector] = await probe.run(["dimension probe"]);
    const dims = vector!.length;
    if (options.dimensions !== undefined && options.dimensions !== dims) {
      throw new HermesMemoryError({
        code: "EMBEDDING_DIMENSION_MISMATCH",
        message: `The ONNX model in ${options.modelDir} produces ${dims}-dimensional vectors but memory.vector.dimensions is ${options.dimensions}. Set memory.vector.dimensions: ${dims} and run \`hermes-memory vector reindex\`.`,
      });
    }
    return new OnnxEmbedder(ort, session, tokenizer, dims, options);
  }

  /** Embed texts in batches (CPU inference). */
  async embed(texts: string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    const size = this.options.batchSize ?? 16;
    for (let i = 0; i < texts.length; i += size) out.push(...(await this.run(texts.slice(i, i + size))));
    return out;
  }

  private async run(texts: string[]): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const encodings = texts.map((t) => this.tokenizer.encode(t, this.options.maxLength ?? 256));
    const seq = Math.max(...encodings.map((e) => e.ids.length));
    const batch = texts.length;
    const ids = new BigInt64Array(batch * seq).fill(BigInt(this.tokenizer.padId));
    const mask = new BigInt64Array(batch * seq);
    encodings.forEach((e, b) => {
      e.ids.forEach((id, t) => {
        ids[b * seq + t] = BigInt(id);
        mask[b * seq + t] = 1n;
      });
    });
    const feeds: Record<string, InstanceType<OrtModule["Tensor"]>> = {};
    for (const name of this.session.inputNames) {
      if (name === "input_ids") feeds[name] = new this.ort.Tensor("int64", ids, [batch, seq]);
      else if (name === "attention_mask") feeds[name] = new this.ort.Tensor("int64", mask, [batch, seq]);
      else if (name === "token_type_ids") feeds[name] = new this.ort.Tensor("int64", new BigInt64Array(batch * seq), [batch, seq]);
      else {
        throw new HermesMemoryError({ code: "INVALID_CONFIG", message: `The ONNX model expects an input "${name}" this embedder does not know; use a BERT-style sentence-embedding export (inputs input_ids, attention_mask, token_type_ids).` });
      }
    }
    const results = await this.session.run(feeds);
    const outputName = this.session.outputNames.includes("sentence_embedding") ? "sentence_embedding" : this.session.outputNames[0]!;
    const output = results[outputName]!;
    const data = output.data as Float32Array;
    const dims = output.dims.map(Number);
    if (dims.length === 2) {
      const hidden = dims[1]!;
      return texts.map((_, b) => l2Normalize(Float32Array.from(data.subarray(b * hidden, (b + 1) * hidden))));
    }
    const hidden = dims[2]!;
    return encodings.map((e, b) => {
      const vector = new Float32Array(hidden);
      if (this.options.pooling === "cls") {
        vector.set(data.subarray(b * seq * hidden, b * seq * hidden + hidden));
        return l2Normalize(vector);
      }
      // Mean over real tokens only: padding must not change a text's embedding.
      for (let t = 0; t < e.ids.length; t++) {
        const base = (b * seq + t) * hidden;
        for (let h = 0; h < hidden; h++) vector[h] = vector[h]! + data[base + h]!;
      }
      for (let h = 0; h < hidden; h++) vector[h] = vector[h]! / e.ids.length;
      return l2Normalize(vector);
    });
  }

  /** Release the inference session. */
  async close(): Promise<void> {
    await this.session.release();
  }
}
