import fs from "node:fs";
import path from "node:path";
import { HermesMemoryError, describeError } from "@hermes/memory-core";
import { l2Normalize, type Embedder } from "./embedder.js";
import { markContentRefusal } from "../retry-policy.js";
import { MODEL_DIR_FIX, WordPieceTokenizer, checkModelFile, type Encoding } from "./wordpiece-tokenizer.js";

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

/**
 * Largest model file handed to onnxruntime: 2 GiB, the most a single protobuf message (an ONNX
 * model without external data) can hold. Real sentence-embedding models are 20 MB to 1.3 GB.
 */
export const MAX_ONNX_MODEL_BYTES = 2 * 1024 * 1024 * 1024;

/** Text of the first test inference of `load` (its tokens, then the vocabulary's largest id). */
const PROBE_TEXT = "dimension probe";

/** Where a failure happened: the test inference of `load` (a bad model) or a later `embed`. */
type Stage = "load" | "embed";

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

  private constructor(
    ort: OrtModule,
    session: OrtSession,
    tokenizer: WordPieceTokenizer,
    dimensions: number,
    options: OnnxEmbedderOptions,
  ) {
    this.ort = ort;
    this.session = session;
    this.tokenizer = tokenizer;
    this.dimensions = dimensions;
    this.options = options;
    this.id = `onnx:${path.basename(path.resolve(options.modelDir))}`;
  }

  /**
   * Load the model and tokenizer and probe the output size with one tiny inference. Throws
   * `PROVIDER_UNAVAILABLE` when onnxruntime-node is missing, `EMBEDDING_DIMENSION_MISMATCH` when
   * `dimensions` disagrees with the model, and `INVALID_CONFIG` naming the file and the fix for an
   * unusable directory: a model or tokenizer file that is not a regular file, is empty or over its
   * size cap, that onnxruntime or the tokenizer cannot read, or a model whose inputs are not BERT's
   * or whose test inference fails or gives no finite float32 vector per text.
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
    // onnxruntime opens and reads the file synchronously in native code: a FIFO would block the
    // whole process, so only a regular file within the size cap is handed over.
    checkModelFile(modelFile, MAX_ONNX_MODEL_BYTES, false);
    let session: OrtSession;
    try {
      session = await ort.InferenceSession.create(modelFile, { graphOptimizationLevel: "all", intraOpNumThreads: 1 });
    } catch (error) {
      throw new HermesMemoryError({
        code: "INVALID_CONFIG",
        message: `onnxruntime cannot load ${modelFile} (${clip(describeError(error))}); the file is damaged, truncated or not an ONNX model. ${MODEL_DIR_FIX}`,
        cause: error,
      });
    }
    try {
      const unknown = session.inputNames.find((name) => !["input_ids", "attention_mask", "token_type_ids"].includes(name));
      if (unknown !== undefined || !session.inputNames.includes("input_ids")) {
        throw new HermesMemoryError({
          code: "INVALID_CONFIG",
          message: `The ONNX model ${modelFile} ${unknown !== undefined ? `expects an input "${clip(unknown)}" this embedder does not know` : "has no input_ids input"}; use a BERT-style sentence-embedding export (inputs input_ids, attention_mask, token_type_ids).`,
        });
      }
      if (session.outputNames.length === 0)
        throw new HermesMemoryError({ code: "INVALID_CONFIG", message: `The ONNX model ${modelFile} has no outputs. ${MODEL_DIR_FIX}` });
      const probe = new OnnxEmbedder(ort, session, tokenizer, 0, options);
      // Two texts of different lengths check the batch and padding handling; the second holds the
      // largest token id, which the model's embedding table must have a row for.
      const [vector] = await probe.run(
        [
          tokenizer.encode(PROBE_TEXT, options.maxLength ?? 256),
          { ids: [tokenizer.clsId, tokenizer.maxId, tokenizer.sepId], mask: [1, 1, 1] },
        ],
        "load",
        0,
      );
      const dims = vector!.length;
      if (options.dimensions !== undefined && options.dimensions !== dims) {
        throw new HermesMemoryError({
          code: "EMBEDDING_DIMENSION_MISMATCH",
          message: `The ONNX model in ${options.modelDir} produces ${dims}-dimensional vectors but memory.vector.dimensions is ${options.dimensions}. Set memory.vector.dimensions: ${dims} and run \`hermes-memory vector reindex\`.`,
        });
      }
      return new OnnxEmbedder(ort, session, tokenizer, dims, options);
    } catch (error) {
      await session.release().catch(() => undefined);
      throw error;
    }
  }

  /**
   * Embed texts in batches (CPU inference). A run onnxruntime fails, or an output that is not a
   * finite float32 vector per text, is `STORAGE_FAILED`; a vector of another length than the one
   * `load` measured is `EMBEDDING_DIMENSION_MISMATCH`.
   */
  async embed(texts: string[]): Promise<Float32Array[]> {
    const out: Float32Array[] = [];
    const size = this.options.batchSize ?? 16;
    const maxLength = this.options.maxLength ?? 256;
    for (let i = 0; i < texts.length; i += size) {
      const encodings = texts.slice(i, i + size).map((t) => this.tokenizer.encode(t, maxLength));
      out.push(...(await this.run(encodings, "embed", i)));
    }
    return out;
  }

  /** A failure of the model: `INVALID_CONFIG` in the test inference of `load`, `STORAGE_FAILED` later. */
  private modelError(stage: Stage, problem: string, cause?: unknown): HermesMemoryError {
    const modelDir = this.options.modelDir;
    return new HermesMemoryError({
      code: stage === "load" ? "INVALID_CONFIG" : "STORAGE_FAILED",
      message:
        stage === "load"
          ? `The ONNX model in ${modelDir} failed a test inference: ${problem}. It is damaged, or not a sentence-embedding model matching its tokenizer. ${MODEL_DIR_FIX}`
          : `The ONNX model in ${modelDir} ${problem}. If this repeats, the model is damaged: ${MODEL_DIR_FIX}`,
      ...(cause === undefined ? {} : { cause }),
    });
  }

  /**
   * One inference over `encodings`: the pooled, L2-normalised vector of each. The output must be
   * float32 of shape [batch, hidden] (already pooled) or [batch, tokens, hidden] with hidden ≥ 1,
   * and every pooled number finite; `first` is the index of the first text within the `embed`
   * call, for messages.
   */
  private async run(encodings: Encoding[], stage: Stage, first: number): Promise<Float32Array[]> {
    if (encodings.length === 0) return [];
    const seq = Math.max(...encodings.map((e) => e.ids.length));
    const batch = encodings.length;
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
    }
    let results: Awaited<ReturnType<OrtSession["run"]>>;
    try {
      results = await this.session.run(feeds);
    } catch (error) {
      throw this.modelError(
        stage,
        stage === "load"
          ? `onnxruntime failed (${clip(describeError(error))})`
          : `failed on texts ${first + 1} to ${first + batch} (${clip(describeError(error))})`,
        error,
      );
    }
    const outputName = this.session.outputNames.includes("sentence_embedding") ? "sentence_embedding" : this.session.outputNames[0]!;
    const output = results[outputName];
    if (!output || output.type !== "float32" || !(output.data instanceof Float32Array)) {
      throw this.modelError(stage, `its output "${clip(outputName)}" holds ${output ? output.type : "nothing"}, not float32 numbers`);
    }
    const data = output.data;
    const dims = output.dims.map(Number);
    const pooled = dims.length === 2 && dims[0] === batch && dims[1]! >= 1 && data.length === batch * dims[1]!;
    const perToken = dims.length === 3 && dims[0] === batch && dims[1] === seq && dims[2]! >= 1 && data.length === batch * seq * dims[2]!;
    if (!pooled && !perToken) {
      throw this.modelError(
        stage,
        `its output "${clip(outputName)}" has the shape [${dims.join(", ")}] for ${batch} texts of ${seq} tokens; expected [${batch}, hidden] or [${batch}, ${seq}, hidden]`,
      );
    }
    const hidden = dims[dims.length - 1]!;
    return encodings.map((e, b) => {
      // Summed in float64: float32 sums of large activations overflow to Infinity.
      const sum = new Float64Array(hidden);
      if (pooled) sum.set(data.subarray(b * hidden, (b + 1) * hidden));
      else if (this.options.pooling === "cls") sum.set(data.subarray(b * seq * hidden, b * seq * hidden + hidden));
      else {
        // Mean over real tokens only: padding must not change a text's embedding.
        for (let t = 0; t < e.ids.length; t++) {
          const base = (b * seq + t) * hidden;
          for (let h = 0; h < hidden; h++) sum[h] = sum[h]! + data[base + h]!;
        }
        for (let h = 0; h < hidden; h++) sum[h] = sum[h]! / e.ids.length;
      }
      const vector = Float32Array.from(sum);
      if (!vector.every(Number.isFinite)) {
        if (stage === "load") throw this.modelError(stage, "it produced NaN or infinite numbers");
        // Inference is deterministic: this text gives the same numbers every time, a refusal of its content.
        throw markContentRefusal(
          this.modelError(stage, `produced NaN or infinite numbers for text ${first + b + 1}; such a vector cannot be stored`),
          "local",
        );
      }
      if (this.dimensions !== 0 && vector.length !== this.dimensions) {
        throw new HermesMemoryError({
          code: "EMBEDDING_DIMENSION_MISMATCH",
          message: `The ONNX model in ${this.options.modelDir} produced a ${vector.length}-dimensional vector for text ${first + b + 1} after ${this.dimensions}-dimensional ones; the model is damaged. ${MODEL_DIR_FIX}`,
        });
      }
      return l2Normalize(vector);
    });
  }

  /** Release the inference session. */
  async close(): Promise<void> {
    await this.session.release();
  }
}

/** An outside message cut to 300 characters (onnxruntime's can be long). */
function clip(text: string): string {
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}
