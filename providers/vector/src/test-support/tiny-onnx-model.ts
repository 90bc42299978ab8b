/**
 * Writes a tiny sentence-embedding "model" directory for tests: an ONNX graph built in-process with
 * onnx-proto (input_ids → Gather(embedding table) → last_hidden_state, plus an unused
 * attention_mask input like real BERT exports) and a WordPiece tokenizer.json. No weights are
 * downloaded; the embedding table is hand-made so "cat" and "dog" are close and "car" is not.
 */
import fs from "node:fs";
import path from "node:path";
import onnxProto, { type onnx as proto } from "onnx-proto";

// onnx-proto is CommonJS: its default export is the only import plain Node ESM (a child process
// run with tsx) and vitest both resolve.
const { onnx } = onnxProto;

export const TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "cat", "dog", "##s", "car", "the", "!"] as const;
export const TINY_DIMS = 4;

/** The hand-made embedding table: one row of TINY_DIMS numbers per TINY_VOCAB token. */
export const TINY_TABLE: readonly number[][] = [
  [0, 0, 0, 0], // [PAD]
  [0, 0, 0, 0.1], // [UNK]
  [0, 0, 0, 0], // [CLS]
  [0, 0, 0, 0], // [SEP]
  [1, 0.2, 0, 0], // cat
  [0.9, 0.3, 0, 0], // dog
  [0, 0, 0.1, 0], // ##s
  [0, 0, 1, 0.2], // car
  [0.05, 0.05, 0.05, 0.05], // the
  [0, 0, 0, 0.05], // !
];

function valueInfo(name: string, elemType: number, dims: Array<number | string>): proto.IValueInfoProto {
  return {
    name,
    type: {
      tensorType: {
        elemType,
        shape: { dim: dims.map((d) => (typeof d === "number" ? { dimValue: d } : { dimParam: d })) },
      },
    },
  };
}

/**
 * Variations of the tiny graph, for tests of models that load but misbehave: another embedding
 * table (one row of TINY_DIMS numbers per TINY_VOCAB token), another name for the token-id input,
 * or `tail` nodes that turn the gathered `hidden` states ([batch, seq, TINY_DIMS]) into the graph
 * output `last_hidden_state` of the declared type and shape.
 */
export interface TinyOnnxModelVariant {
  table?: readonly number[][];
  idsInput?: string;
  tail?: { nodes: proto.INodeProto[]; initializers?: proto.ITensorProto[]; outputType?: number; outputShape: Array<number | string> };
}

/** The bytes of the tiny model.onnx (or of a variant of it). */
export function tinyOnnxModelBytes(variant: TinyOnnxModelVariant = {}): Uint8Array {
  const table = variant.table ?? TINY_TABLE;
  const ids = variant.idsInput ?? "input_ids";
  const tail = variant.tail;
  const model = onnx.ModelProto.create({
    irVersion: 8,
    producerName: "hermes-memory-vector-test",
    opsetImport: [{ domain: "", version: 13 }],
    graph: {
      name: "tiny-embedder",
      node: [
        {
          opType: "Gather",
          input: ["embeddings", ids],
          output: [tail ? "hidden" : "last_hidden_state"],
          attribute: [{ name: "axis", type: onnx.AttributeProto.AttributeType.INT, i: 0 }],
        },
        ...(tail?.nodes ?? []),
      ],
      initializer: [
        { name: "embeddings", dims: [table.length, TINY_DIMS], dataType: onnx.TensorProto.DataType.FLOAT, floatData: table.flat() },
        ...(tail?.initializers ?? []),
      ],
      input: [
        valueInfo(ids, onnx.TensorProto.DataType.INT64, ["batch", "seq"]),
        valueInfo("attention_mask", onnx.TensorProto.DataType.INT64, ["batch", "seq"]),
      ],
      output: [
        valueInfo(
          "last_hidden_state",
          tail?.outputType ?? onnx.TensorProto.DataType.FLOAT,
          tail?.outputShape ?? ["batch", "seq", TINY_DIMS],
        ),
      ],
    },
  });
  return onnx.ModelProto.encode(model).finish();
}

/** Create the model directory under `dir` (model.onnx + tokenizer.json) and return its path. */
export function writeTinyOnnxModel(dir: string, variant: TinyOnnxModelVariant = {}): string {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "model.onnx"), tinyOnnxModelBytes(variant));
  const tokenizer = {
    version: "1.0",
    normalizer: { type: "BertNormalizer", lowercase: true, strip_accents: null, clean_text: true, handle_chinese_chars: true },
    pre_tokenizer: { type: "BertPreTokenizer" },
    model: {
      type: "WordPiece",
      unk_token: "[UNK]",
      continuing_subword_prefix: "##",
      max_input_chars_per_word: 100,
      vocab: Object.fromEntries(TINY_VOCAB.map((t, i) => [t, i])),
    },
  };
  fs.writeFileSync(path.join(dir, "tokenizer.json"), JSON.stringify(tokenizer));
  return dir;
}
