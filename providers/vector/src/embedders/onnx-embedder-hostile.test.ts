import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import onnxProto from "onnx-proto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { MAX_ONNX_MODEL_BYTES, OnnxEmbedder } from "./onnx-embedder.js";
import { isContentRefusal } from "../retry-policy.js";
import { MAX_TOKENIZER_JSON_BYTES, MAX_VOCAB_TOKENS, WordPieceTokenizer } from "./wordpiece-tokenizer.js";
import { runScriptInChild } from "../test-support/run-script.js";
import {
  TINY_DIMS,
  TINY_TABLE,
  TINY_VOCAB,
  tinyOnnxModelBytes,
  writeTinyOnnxModel,
  type TinyOnnxModelVariant,
} from "../test-support/tiny-onnx-model.js";

const { onnx } = onnxProto;
const DataType = onnx.TensorProto.DataType;
const EMBEDDER_MODULE = pathToFileURL(fileURLToPath(new URL("./onnx-embedder.ts", import.meta.url))).href;
const hasMkfifo = spawnSync("mkfifo", ["--version"]).status === 0;

let root: string;
let counter = 0;
beforeAll(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-vector-onnx-hostile-"));
});
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

/** A fresh copy of the tiny model directory (or of a variant of its graph). */
function modelDir(variant: TinyOnnxModelVariant = {}): string {
  return writeTinyOnnxModel(path.join(root, `model-${++counter}`), variant);
}

/** A tiny model directory whose `file` is replaced by what `put` leaves at the given path. */
function modelDirWith(file: string, put: (target: string) => void): string {
  const dir = modelDir();
  const target = path.join(dir, file);
  fs.rmSync(target, { force: true });
  put(target);
  return dir;
}

function sparseFile(size: number): (target: string) => void {
  return (target) => {
    fs.writeFileSync(target, "");
    fs.truncateSync(target, size);
  };
}

function mkfifo(target: string): void {
  expect(spawnSync("mkfifo", [target]).status).toBe(0);
}

async function loadError(dir: string): Promise<unknown> {
  return OnnxEmbedder.load({ modelDir: dir, dimensions: TINY_DIMS }).then(
    async (e) => {
      await e.close();
      return null;
    },
    (error: unknown) => error,
  );
}

function expectInvalidConfig(error: unknown, message: RegExp): void {
  expect(HermesMemoryError.hasCode(error, "INVALID_CONFIG"), String(error)).toBe(true);
  expect((error as Error).message).toMatch(message);
}

/** The fix every message about a file of the model directory ends with. */
const FIX = /Re-download the model, or point memory\.vector\.onnx_model_dir at a directory holding model\.onnx and tokenizer\.json/;

interface ChildResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  result: { ok?: boolean; code?: string; message?: string; lengths?: number[]; norms?: number[] } | null;
}

/**
 * `OnnxEmbedder.load(dir)` (and `embed` of the texts the JavaScript expression `texts` makes, if
 * given) in a child process, killed after `ms`: a blocking open of a FIFO or an endless read
 * happens synchronously, which no test timeout could interrupt, and running out of memory aborts
 * the process.
 */
function loadInChild(dir: string, options: { texts?: string; heapMb?: number } = {}, ms = 20_000): Promise<ChildResult> {
  const script = `const { OnnxEmbedder } = await import(${JSON.stringify(EMBEDDER_MODULE)});
const out = (r) => process.stdout.write(JSON.stringify(r));
try {
  const e = await OnnxEmbedder.load({ modelDir: ${JSON.stringify(dir)} });
  const vectors = await e.embed(${options.texts ?? "[]"});
  out({ ok: true, lengths: vectors.map((v) => v.length), norms: vectors.map((v) => Math.hypot(...v)) });
  await e.close();
} catch (error) {
  out({ ok: false, code: error?.code, message: String(error?.message) });
}`;
  return runScriptInChild(script, { ms, ...(options.heapMb ? { heapMb: options.heapMb } : {}) }).then(({ code, signal, out, timedOut }) => {
    let result: ChildResult["result"] = null;
    try {
      result = JSON.parse(out) as ChildResult["result"];
    } catch {
      // No (complete) answer: the child hung, crashed or ran out of memory.
    }
    return { code, signal, timedOut, result };
  });
}

function expectRefusedInChild(r: ChildResult, message: RegExp): void {
  expect(r.timedOut, "the child hung and was killed").toBe(false);
  expect(r.signal).toBeNull();
  expect(r.result).toMatchObject({ ok: false, code: "INVALID_CONFIG" });
  expect(r.result!.message).toMatch(message);
  expect(r.result!.message).toMatch(FIX);
}

describe("OnnxEmbedder: files that would block or never end (child processes)", () => {
  it.skipIf(!hasMkfifo)(
    "a FIFO as model.onnx, tokenizer.json or vocab.txt is refused at once instead of freezing the process",
    { timeout: 60_000 },
    async () => {
      const model = modelDirWith("model.onnx", mkfifo);
      const tokenizer = modelDirWith("tokenizer.json", mkfifo);
      const vocab = modelDirWith("tokenizer.json", () => undefined);
      mkfifo(path.join(vocab, "vocab.txt"));
      const [m, t, v] = await Promise.all([loadInChild(model), loadInChild(tokenizer), loadInChild(vocab)]);
      expectRefusedInChild(m, /model\.onnx: it is not a regular file \(a FIFO, device or socket\); it was not read/);
      expectRefusedInChild(t, /tokenizer\.json: it is not a regular file/);
      expectRefusedInChild(v, /vocab\.txt: it is not a regular file/);
    },
  );

  it.skipIf(!fs.existsSync("/dev/zero"))(
    "a symlink to /dev/zero and a sparse 3 GiB tokenizer file are refused without being read",
    { timeout: 60_000 },
    async () => {
      const zeroJson = modelDirWith("tokenizer.json", (t) => fs.symlinkSync("/dev/zero", t));
      const zeroVocab = modelDirWith("tokenizer.json", () => undefined);
      fs.symlinkSync("/dev/zero", path.join(zeroVocab, "vocab.txt"));
      const huge = modelDirWith("tokenizer.json", sparseFile(3 * 1024 ** 3));
      const [a, b, c] = await Promise.all([loadInChild(zeroJson), loadInChild(zeroVocab), loadInChild(huge)]);
      expectRefusedInChild(a, /tokenizer\.json: it is not a regular file/);
      expectRefusedInChild(b, /vocab\.txt: it is not a regular file/);
      expectRefusedInChild(
        c,
        /tokenizer\.json: it is larger than 32 MiB, more than any file of a real sentence-embedding model; it was not read/,
      );
    },
  );

  it("16 MB texts (one endless word, four million short words) embed within a 64 MB heap", { timeout: 60_000 }, async () => {
    const r = await loadInChild(modelDir(), { texts: `["c".repeat(16_000_000) + " cat", "cat ".repeat(4_000_000)]`, heapMb: 64 });
    expect(r.timedOut).toBe(false);
    expect(r.signal).toBeNull();
    expect(r.result).toMatchObject({ ok: true, lengths: [TINY_DIMS, TINY_DIMS] });
    r.result!.norms!.forEach((n) => expect(n).toBeCloseTo(1, 5));
  });
});

describe("OnnxEmbedder: a damaged model.onnx is INVALID_CONFIG naming the file and the fix", () => {
  it("empty, truncated, random bytes, another protobuf message, a directory, /dev/zero, over 2 GiB", async () => {
    const valid = tinyOnnxModelBytes();
    let seed = 7;
    const random = Buffer.from(Array.from({ length: 4096 }, () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) & 0xff));
    const cases: Array<[string, (target: string) => void, RegExp]> = [
      ["empty", (t) => fs.writeFileSync(t, ""), /model\.onnx: it is empty \(an interrupted download\?\)/],
      ...[1, 10, 50, 90].map((pct): [string, (t: string) => void, RegExp] => [
        `truncated at ${pct}%`,
        (t) => fs.writeFileSync(t, valid.subarray(0, Math.floor((valid.length * pct) / 100))),
        /onnxruntime cannot load .*model\.onnx \(.*\); the file is damaged, truncated or not an ONNX model/,
      ]),
      ["random bytes", (t) => fs.writeFileSync(t, random), /onnxruntime cannot load .*model\.onnx/],
      [
        "a TensorProto",
        (t) =>
          fs.writeFileSync(t, onnx.TensorProto.encode({ name: "x", dims: [3], dataType: DataType.FLOAT, floatData: [1, 2, 3] }).finish()),
        /onnxruntime cannot load/,
      ],
      [
        "a GraphProto",
        (t) => fs.writeFileSync(t, onnx.GraphProto.encode({ name: "g", node: [{ opType: "Relu", input: ["a"], output: ["b"] }] }).finish()),
        /onnxruntime cannot load/,
      ],
      ["a directory", (t) => fs.mkdirSync(t), /model\.onnx: it is a directory, not a file/],
      ["a symlink to /dev/zero", (t) => fs.symlinkSync("/dev/zero", t), /model\.onnx: it is not a regular file/],
      ["a sparse file over 2 GiB", sparseFile(MAX_ONNX_MODEL_BYTES + 1), /model\.onnx: it is larger than 2 GiB/],
    ];
    for (const [label, put, message] of cases) {
      if (label.includes("/dev/zero") && !fs.existsSync("/dev/zero")) continue;
      const error = await loadError(modelDirWith("model.onnx", put));
      expectInvalidConfig(error, message);
      expect((error as Error).message, label).toMatch(FIX);
    }
  });
});

/** Tail nodes turning the gathered `hidden` states into the output `last_hidden_state`. */
function tail(nodes: TinyOnnxModelVariant["tail"]): TinyOnnxModelVariant {
  return { tail: nodes! };
}
const int64s = (name: string, values: number[]) => ({ name, dims: [values.length], dataType: DataType.INT64, int64Data: values });

describe("OnnxEmbedder: a model whose output is not one finite float32 vector per text", () => {
  it("a wrong rank, a batch or token axis of the wrong size, an empty hidden axis or a non-float32 output fails the test inference of load", async () => {
    const cases: Array<[string, TinyOnnxModelVariant, RegExp]> = [
      [
        "rank 4",
        tail({
          nodes: [{ opType: "Unsqueeze", input: ["hidden", "axes"], output: ["last_hidden_state"] }],
          initializers: [int64s("axes", [3])],
          outputShape: ["batch", "seq", TINY_DIMS, 1],
        }),
        /has the shape \[2, \d+, 4, 1\] for 2 texts/,
      ],
      [
        "rank 1",
        tail({
          nodes: [{ opType: "Reshape", input: ["hidden", "shape"], output: ["last_hidden_state"] }],
          initializers: [int64s("shape", [-1])],
          outputShape: ["n"],
        }),
        /has the shape \[\d+\] for 2 texts/,
      ],
      [
        "hidden 0",
        tail({
          nodes: [{ opType: "Slice", input: ["hidden", "s", "e", "a"], output: ["last_hidden_state"] }],
          initializers: [int64s("s", [0]), int64s("e", [0]), int64s("a", [2])],
          outputShape: ["batch", "seq", 0],
        }),
        /has the shape \[2, \d+, 0\]/,
      ],
      [
        "batch axis of 1",
        tail({
          nodes: [
            {
              opType: "ReduceMean",
              input: ["hidden"],
              output: ["last_hidden_state"],
              attribute: [
                { name: "axes", type: 7, ints: [0] },
                { name: "keepdims", type: 2, i: 1 },
              ],
            },
          ],
          outputShape: [1, "seq", TINY_DIMS],
        }),
        /has the shape \[1, \d+, 4\] for 2 texts/,
      ],
      [
        "2-D over tokens instead of texts",
        tail({
          nodes: [
            {
              opType: "ReduceMean",
              input: ["hidden"],
              output: ["last_hidden_state"],
              attribute: [
                { name: "axes", type: 7, ints: [0] },
                { name: "keepdims", type: 2, i: 0 },
              ],
            },
          ],
          outputShape: ["seq", TINY_DIMS],
        }),
        /has the shape \[\d+, 4\] for 2 texts/,
      ],
      [
        "int64",
        tail({
          nodes: [
            { opType: "Cast", input: ["hidden"], output: ["last_hidden_state"], attribute: [{ name: "to", type: 2, i: DataType.INT64 }] },
          ],
          outputType: DataType.INT64,
          outputShape: ["batch", "seq", TINY_DIMS],
        }),
        /holds int64, not float32/,
      ],
      [
        "float16",
        tail({
          nodes: [
            { opType: "Cast", input: ["hidden"], output: ["last_hidden_state"], attribute: [{ name: "to", type: 2, i: DataType.FLOAT16 }] },
          ],
          outputType: DataType.FLOAT16,
          outputShape: ["batch", "seq", TINY_DIMS],
        }),
        /holds float16, not float32/,
      ],
      ["NaN everywhere", { table: TINY_TABLE.map(() => [NaN, NaN, NaN, NaN]) }, /it produced NaN or infinite numbers/],
    ];
    for (const [label, variant, message] of cases) {
      const error = await loadError(modelDir(variant));
      expectInvalidConfig(error, /The ONNX model in .* failed a test inference: /);
      expect((error as Error).message, label).toMatch(message);
    }
  });

  it("a text whose tokens give NaN or Infinity is STORAGE_FAILED naming the text; other texts still embed", async () => {
    const table = TINY_TABLE.map((row, i) =>
      TINY_VOCAB[i] === "cat" ? [NaN, 0, 0, 0] : TINY_VOCAB[i] === "dog" ? [Infinity, 0, 0, 0] : [...row],
    );
    const e = await OnnxEmbedder.load({ modelDir: modelDir({ table }), dimensions: TINY_DIMS });
    try {
      for (const texts of [["car", "cat"], ["dog"]]) {
        const error = await e.embed(texts).catch((err: unknown) => err);
        expect(HermesMemoryError.hasCode(error, "STORAGE_FAILED"), String(error)).toBe(true);
        expect((error as Error).message).toMatch(
          new RegExp(`produced NaN or infinite numbers for text ${texts.length}; such a vector cannot be stored`),
        );
        // The same text gives the same numbers every time: a refusal of its content, not an outage.
        expect(isContentRefusal(error)).toBe(true);
      }
      const [car] = await e.embed(["car"]);
      expect(Math.hypot(...car!)).toBeCloseTo(1, 5);
    } finally {
      await e.close();
    }
  });

  it("activations near the float32 limit are averaged without overflowing to Infinity", async () => {
    const e = await OnnxEmbedder.load({ modelDir: modelDir({ table: TINY_TABLE.map(() => [3e38, 3e38, 0, 0]) }), dimensions: TINY_DIMS });
    const [v] = await e.embed(["cat dog car"]);
    await e.close();
    expect(Array.from(v!).every(Number.isFinite)).toBe(true);
    expect(v![0]).toBeCloseTo(Math.SQRT1_2, 5);
  });

  it("a tokenizer with ids past the model's embedding table fails load, not a later embed", async () => {
    const dir = modelDir();
    const spec = JSON.parse(fs.readFileSync(path.join(dir, "tokenizer.json"), "utf8")) as { model: { vocab: Record<string, number> } };
    spec.model.vocab.cats = 1_000_000;
    fs.writeFileSync(path.join(dir, "tokenizer.json"), JSON.stringify(spec));
    expectInvalidConfig(
      await loadError(dir),
      /failed a test inference: onnxruntime failed \(.*indices element out of data bounds.*\)\. It is damaged, or not a sentence-embedding model matching its tokenizer/,
    );
  });
});

describe("WordPieceTokenizer: a damaged tokenizer.json or vocab.txt is INVALID_CONFIG naming the file", () => {
  /** A model directory whose tokenizer.json holds `text`. */
  function withTokenizerJson(text: string): string {
    return modelDirWith("tokenizer.json", (t) => fs.writeFileSync(t, text));
  }
  function refusal(dir: string): unknown {
    try {
      WordPieceTokenizer.fromDirectory(dir);
      return null;
    } catch (error) {
      return error;
    }
  }
  const spec = (model: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
    JSON.stringify({
      ...extra,
      model: { type: "WordPiece", unk_token: "[UNK]", vocab: Object.fromEntries(TINY_VOCAB.map((t, i) => [t, i])), ...model },
    });

  it("empty, not JSON, nested 100,000 deep, null, or over 32 MiB", () => {
    const cases: Array<[string, RegExp]> = [
      ["", /tokenizer\.json: it is empty/],
      ["hello {", /tokenizer\.json: it is not JSON \(/],
      ["[".repeat(100_000), /tokenizer\.json: it nests arrays or objects more than 64 deep/],
      ["[".repeat(100_000) + "]".repeat(100_000), /nests arrays or objects more than 64 deep/],
      ['{"a":'.repeat(100_000) + "1" + "}".repeat(100_000), /nests arrays or objects more than 64 deep/],
    ];
    for (const [text, message] of cases) {
      const error = refusal(withTokenizerJson(text));
      expectInvalidConfig(error, message);
      expect((error as Error).message).toMatch(FIX);
    }
    expectInvalidConfig(refusal(withTokenizerJson("null")), /tokenizer\.json uses an unknown tokenizer; only WordPiece/);
    expectInvalidConfig(
      refusal(modelDirWith("tokenizer.json", sparseFile(MAX_TOKENIZER_JSON_BYTES + 1))),
      /tokenizer\.json: it is larger than 32 MiB/,
    );
  });

  it("a vocabulary or settings of the wrong types", () => {
    const ids = (f: (i: number) => unknown) => ({ vocab: Object.fromEntries(TINY_VOCAB.map((t, i) => [t, f(i)])) });
    const cases: Array<[string, RegExp]> = [
      [spec(ids(() => "x")), /tokenizer\.json gives the token "\[PAD\]" the id "x"; ids must be whole numbers from 0/],
      [spec(ids((i) => i + 0.5)), /the id 0\.5; ids must be whole numbers/],
      [spec(ids((i) => -i - 1)), /the id -1; ids must be whole numbers/],
      [spec(ids((i) => 1e300 + i)), /the id 1e\+300; ids must be whole numbers/],
      [spec(ids(() => null)), /the id null; ids must be whole numbers/],
      [spec({ continuing_subword_prefix: { a: 1 } }), /model\.continuing_subword_prefix is \{"a":1\}, not a short text/],
      [spec({ max_input_chars_per_word: "abc" }), /model\.max_input_chars_per_word is "abc", not a whole number from 1 to 1000/],
      [spec({ max_input_chars_per_word: 1e9 }), /model\.max_input_chars_per_word is 1000000000, not a whole number from 1 to 1000/],
      [spec({ unk_token: { a: 1 } }), /model\.unk_token is \{"a":1\}, not a token/],
    ];
    for (const [text, message] of cases) {
      const error = refusal(withTokenizerJson(text));
      expectInvalidConfig(error, message);
      expect((error as Error).message).toMatch(/tokenizer\.json/);
    }
    // A normalizer list that is not a list is ignored (the default: lowercase).
    const t = WordPieceTokenizer.fromDirectory(withTokenizerJson(spec({}, { normalizer: { type: "Sequence", normalizers: { a: 1 } } })));
    expect(t.encode("CAT dog").ids).toEqual([2, 4, 5, 3]);
  });

  it("vocab.txt: empty, binary, or more tokens than any real model", () => {
    const withVocab = (content: string | Buffer) => {
      const dir = modelDirWith("tokenizer.json", () => undefined);
      fs.writeFileSync(path.join(dir, "vocab.txt"), content);
      return dir;
    };
    expectInvalidConfig(refusal(withVocab("")), /vocab\.txt: it is empty/);
    expectInvalidConfig(
      refusal(withVocab(Buffer.from([0, 159, 146, 150, 255, 10, 0, 1]))),
      /vocabulary in .*vocab\.txt has no \[UNK\] token/,
    );
    const lines = [...TINY_VOCAB, ...Array.from({ length: MAX_VOCAB_TOKENS + 1 - TINY_VOCAB.length }, (_, i) => `t${i}`)].join("\n");
    expectInvalidConfig(refusal(withVocab(lines)), /vocab\.txt has more than 1000000 tokens/);
    expect(WordPieceTokenizer.fromDirectory(withVocab(TINY_VOCAB.join("\r\n") + "\r\n")).encode("the cats!").ids).toEqual([
      2, 8, 4, 6, 9, 3,
    ]);
  });
});

describe("OnnxEmbedder: hostile text", () => {
  it("lone surrogates, NUL, 1 MB of emoji and a 10 MB text embed as finite unit vectors", async () => {
    const e = await OnnxEmbedder.load({ modelDir: modelDir(), dimensions: TINY_DIMS });
    const texts = [
      "cat \ud800 dog \udc00x \ud83d",
      "\udfff".repeat(1000),
      "cat\u0000dog\u0000",
      "\u0000".repeat(100_000),
      "😀".repeat(262_144),
      "😀 ".repeat(350_000),
      "cat ".repeat(2_500_000),
    ];
    const vectors = await e.embed(texts);
    // Truncation keeps the text's start: a long text embeds like its first words.
    const [short] = await e.embed(["cat ".repeat(300)]);
    await e.close();
    expect(vectors).toHaveLength(texts.length);
    for (const v of vectors) {
      expect(v).toHaveLength(TINY_DIMS);
      expect(Math.hypot(...v)).toBeCloseTo(1, 5);
    }
    Array.from(short!).forEach((x, i) => expect(vectors[6]![i]).toBeCloseTo(x, 6));
  });
});
