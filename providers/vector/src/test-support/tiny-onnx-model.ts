/**
 * Writes a tiny sentence-embedding "model" directory for tests: an ONNX graph built in-process with
 * onnx-proto (input_ids → Gather(embedding table) → last_hidden_state, plus an unused
 * attention_mask input like real BERT exports) and a WordPiece tokenizer.json. No weights are
 * downloaded; the embedding table is hand-made so "cat" and "dog" are close and "car" is not.
 */
import fs from "node:fs";
import path from "node:path";
import { onnx } from "onnx-proto";

export const TINY_VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "cat", "dog", "##s", "car", "the", "!"] as const;
export const TINY_DIMS = 4;

const TABLE: number[][] = [
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

function valueInfo(name: string, elemType: number, dims: Array<number | string>): onnx.IValueInfoProto {
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

/** Create the model directory under `dir` (model.onnx + tokenizer.json) and return its path. */
export function writeTinyOnnxModel(dir: string): string {
  fs.mkdirSync(dir, { recursive: true });
  const model = onnx.ModelProto.create({
    irVersion: 8,
    producerName: "hermes-memory-vector-test",
    opsetImport: [{ domain: "", version: 13 }],
    graph: {
      name: "tiny-embedder",
      node: [{ opType: "Gather", input: ["embeddings", "input_ids"], output: ["last_hidden_state"], attribute: [{ name: "axis", type: onnx.AttributeProto.AttributeType.INT, i: 0 }] }],
      initializer: [{ name: "embeddings", dims: [TABLE.length, TINY_DIMS], dataType: onnx.TensorProto.DataType.FLOAT, floatData: TABLE.flat() }],
      input: [valueInfo("input_ids", onnx.TensorProto.DataType.INT64, ["batch", "seq"]), valueInfo("attention_mask", onnx.TensorProto.DataType.INT64, ["batch", "seq"])],
      output: [valueInfo("last_hidden_state", onnx.TensorProto.DataType.FLOAT, ["batch", "seq", TINY_DIMS])],
    },
  });
  fs.writeFileSync(path.join(dir, "model.onnx"), onnx.ModelProto.encode(model).finish());
  const tokenizer = {
    version: "1.0",
    normalizer: { type: "BertNormalizer", lowercase: true, strip_accents: null, clean_text: true, handle_chinese_chars: true },
    pre_tokenizer: { type: "BertPreTokenizer" },
    model: { type: "WordPiece", unk_token: "[UNK]", continuing_subword_prefix: "##", max_input_chars_per_word: 100, vocab: Object.fromEntries(TINY_VOCAB.map((t, i) => [t, i])) },
  };
  fs.writeFileSync(path.join(dir, "tokenizer.json"), JSON.stringify(tokenizer));
  return dir;
}
