import fs from "node:fs";
import path from "node:path";
import { HermesMemoryError, describeError, readBoundedFileSync } from "@hermes/memory-core";
import { jsonNestsDeeperThan } from "@hermes/memory-provider-kit/sqlite";

/** Token ids and attention mask of one text. */
export interface Encoding {
  ids: number[];
  mask: number[];
}

/** How to repair a model directory: the end of every message about a file in one. */
export const MODEL_DIR_FIX =
  "Re-download the model, or point memory.vector.onnx_model_dir at a directory holding model.onnx and tokenizer.json (or vocab.txt) of a BERT-style sentence-embedding model.";

/**
 * Largest tokenizer.json read. The biggest WordPiece vocabulary of a sentence-embedding model
 * (LaBSE, about 500,000 tokens) makes a tokenizer.json of about 15 MB; typical ones are under
 * 1 MB. Parsing a 32 MiB file takes well under a second and a few hundred MB at worst.
 */
export const MAX_TOKENIZER_JSON_BYTES = 32 * 1024 * 1024;
/** Largest vocab.txt read: one token a line, so 16 MiB is three times the biggest real vocabulary. */
export const MAX_VOCAB_TXT_BYTES = 16 * 1024 * 1024;
/** Most tokens a vocabulary may have: twice the biggest real WordPiece vocabulary. */
export const MAX_VOCAB_TOKENS = 1_000_000;
/**
 * Deepest nesting of arrays and objects accepted in tokenizer.json (real files nest about 6
 * deep). Checked before parsing: a file of nothing but `[[[[…` parses into one array per byte,
 * gigabytes for a file under the size cap.
 */
const MAX_TOKENIZER_JSON_DEPTH = 64;
/**
 * Largest `max_input_chars_per_word` accepted (every real model uses 100): matching sub-words costs
 * up to the square of a word's length for each of its characters.
 */
const MAX_WORD_CHARS_LIMIT = 1000;

/**
 * Open flags for files of a model directory: non-blocking, so a FIFO opens at once instead of
 * waiting for a writer (the tokenizer and onnxruntime read synchronously: a blocked open freezes
 * the whole process). Regular files read exactly as without the flag.
 */
const MODEL_FILE_OPEN_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0);

function unusableFile(file: string, why: string, cause?: unknown): HermesMemoryError {
  return new HermesMemoryError({
    code: "INVALID_CONFIG",
    message: `Cannot use ${file}: ${why}. ${MODEL_DIR_FIX}`,
    ...(cause === undefined ? {} : { cause }),
  });
}

function sizeLabel(bytes: number): string {
  return bytes >= 1024 * 1024 * 1024 ? `${bytes / (1024 * 1024 * 1024)} GiB` : `${bytes / (1024 * 1024)} MiB`;
}

/**
 * Check that `file` in a model directory is a non-empty regular file of at most `maxBytes` and,
 * when `read` is set, read it whole; nothing else is opened or read. A FIFO, a device (a symlink
 * to /dev/zero), a socket or a directory is refused after one non-blocking open and an fstat, an
 * empty or oversized file before it is read; the read itself is core's `readBoundedFileSync` (it
 * stops one byte past the cap). Every refusal and OS error is `INVALID_CONFIG` naming the file and
 * the fix.
 */
export function checkModelFile(file: string, maxBytes: number, read: true): Buffer;
export function checkModelFile(file: string, maxBytes: number, read: false): number;
export function checkModelFile(file: string, maxBytes: number, read: boolean): Buffer | number {
  let fd: number;
  try {
    fd = fs.openSync(file, MODEL_FILE_OPEN_FLAGS);
  } catch (error) {
    throw unusableFile(file, `it cannot be opened (${describeError(error)})`, error);
  }
  try {
    // `bigint: true`: on Node 20 a plain stat of a pipe could break a later require() of a native module.
    const stat = fs.fstatSync(fd, { bigint: true });
    if (stat.isDirectory()) throw unusableFile(file, "it is a directory, not a file");
    if (!stat.isFile()) throw unusableFile(file, "it is not a regular file (a FIFO, device or socket); it was not read");
    if (stat.size === 0n) throw unusableFile(file, "it is empty (an interrupted download?)");
    if (stat.size > BigInt(maxBytes))
      throw unusableFile(
        file,
        `it is larger than ${sizeLabel(maxBytes)}, more than any file of a real sentence-embedding model; it was not read`,
      );
    const size = Number(stat.size);
    if (!read) return size;
  } catch (error) {
    if (HermesMemoryError.isInstance(error)) throw error;
    throw unusableFile(file, `it cannot be read (${describeError(error)})`, error);
  } finally {
    try {
      fs.closeSync(fd);
    } catch {
      // Closing a descriptor that was only read cannot lose data.
    }
  }
  // Read with core's bounded reader, which checks again (the file may have been replaced since).
  const bounded = readBoundedFileSync(file, maxBytes);
  if ("bytes" in bounded) return bounded.bytes;
  if ("refused" in bounded) throw unusableFile(file, `it changed while being checked (${bounded.refused})`);
  if ("missing" in bounded) throw unusableFile(file, "it was removed while being checked");
  throw unusableFile(file, `it cannot be read (${describeError(bounded.error)})`, bounded.error);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const PUNCTUATION = /[\p{P}\p{S}]/u;

/**
 * A BERT WordPiece tokenizer read from a local `tokenizer.json` (Hugging Face `tokenizers`
 * format) or `vocab.txt`: lowercasing and accent stripping when the model asks for it,
 * whitespace/punctuation pre-tokenisation, greedy longest-match sub-words, `[CLS] … [SEP]`.
 * Covers the sentence-transformers models (MiniLM, BGE, E5, GTE); other model types are refused.
 */
export class WordPieceTokenizer {
  private readonly vocab: Map<string, number>;
  private readonly lowercase: boolean;
  private readonly prefix: string;
  private readonly maxWordChars: number;
  /** Code points of the longest vocabulary entry: no longer piece of a word can match. */
  private readonly maxPieceChars: number;
  readonly unkId: number;
  readonly clsId: number;
  readonly sepId: number;
  readonly padId: number;
  /** Largest token id of the vocabulary (the model's embedding table must have a row for it). */
  readonly maxId: number;

  /**
   * `vocab` maps tokens to ids, non-negative integers below 2^31, at most `MAX_VOCAB_TOKENS`
   * entries; it must hold `[UNK]` (or `unkToken`), `[CLS]` and `[SEP]`. Anything else is
   * `INVALID_CONFIG`, naming `source` (the file the vocabulary was read from) when given.
   */
  constructor(
    vocab: Map<string, number>,
    options: { lowercase?: boolean; prefix?: string; maxWordChars?: number; unkToken?: string; source?: string } = {},
  ) {
    const of = options.source ? `The tokenizer vocabulary in ${options.source}` : "The tokenizer vocabulary";
    if (vocab.size > MAX_VOCAB_TOKENS) {
      throw new HermesMemoryError({
        code: "INVALID_CONFIG",
        message: `${of} has more than ${MAX_VOCAB_TOKENS} tokens, more than any real model. ${MODEL_DIR_FIX}`,
      });
    }
    let maxId = 0;
    let maxPieceChars = 0;
    for (const [token, id] of vocab) {
      if (!Number.isInteger(id) || id < 0 || id >= 2 ** 31) {
        throw new HermesMemoryError({
          code: "INVALID_CONFIG",
          message: `${of} gives the token ${JSON.stringify(token.slice(0, 40))} the id ${JSON.stringify(id)}; ids must be whole numbers from 0. ${MODEL_DIR_FIX}`,
        });
      }
      if (id > maxId) maxId = id;
      if (token.length > maxPieceChars) maxPieceChars = token.length;
    }
    this.maxId = maxId;
    // UTF-16 length bounds the code points; the prefix of continuation pieces is part of the entry.
    this.maxPieceChars = maxPieceChars;
    this.vocab = vocab;
    this.lowercase = options.lowercase ?? true;
    this.prefix = options.prefix ?? "##";
    this.maxWordChars = options.maxWordChars ?? 100;
    const need = (token: string): number => {
      const id = vocab.get(token);
      if (id === undefined) {
        throw new HermesMemoryError({
          code: "INVALID_CONFIG",
          message: `${of} has no ${token} token; memory.vector.onnx_model_dir must hold a BERT-style (WordPiece) sentence-embedding model. ${MODEL_DIR_FIX}`,
        });
      }
      return id;
    };
    this.unkId = need(options.unkToken ?? "[UNK]");
    this.clsId = need("[CLS]");
    this.sepId = need("[SEP]");
    this.padId = vocab.get("[PAD]") ?? 0;
  }

  /**
   * Load `tokenizer.json` (preferred) or `vocab.txt` from a model directory. Each is read only when
   * it is a regular file within its size cap (`checkModelFile`); a file that is not JSON, nests too
   * deep, or holds a vocabulary or settings of the wrong types is `INVALID_CONFIG` naming it.
   */
  static fromDirectory(dir: string): WordPieceTokenizer {
    const jsonFile = path.join(dir, "tokenizer.json");
    if (fs.existsSync(jsonFile) || isLink(jsonFile)) return WordPieceTokenizer.fromTokenizerJson(jsonFile);
    const vocabFile = path.join(dir, "vocab.txt");
    if (fs.existsSync(vocabFile) || isLink(vocabFile)) {
      const text = checkModelFile(vocabFile, MAX_VOCAB_TXT_BYTES, true).toString("utf8");
      // Token of line n has id n; reading stops one token past the cap, which the constructor refuses.
      const vocab = new Map<string, number>();
      for (let start = 0, line = 0; start <= text.length && vocab.size <= MAX_VOCAB_TOKENS; line++) {
        let end = text.indexOf("\n", start);
        if (end < 0) end = text.length;
        const token = text.slice(start, end > start && text.charCodeAt(end - 1) === 13 ? end - 1 : end);
        if (token !== "") vocab.set(token, line);
        start = end + 1;
      }
      return new WordPieceTokenizer(vocab, { source: vocabFile });
    }
    throw new HermesMemoryError({
      code: "INVALID_CONFIG",
      message: `No tokenizer.json or vocab.txt in ${dir}. memory.vector.onnx_model_dir must be a local sentence-embedding model directory (ONNX + tokenizer).`,
    });
  }

  private static fromTokenizerJson(file: string): WordPieceTokenizer {
    const text = checkModelFile(file, MAX_TOKENIZER_JSON_BYTES, true).toString("utf8");
    if (jsonNestsDeeperThan(text, MAX_TOKENIZER_JSON_DEPTH))
      throw unusableFile(file, `it nests arrays or objects more than ${MAX_TOKENIZER_JSON_DEPTH} deep, which no tokenizer.json does`);
    let spec: unknown;
    try {
      spec = JSON.parse(text);
    } catch (error) {
      throw unusableFile(file, `it is not JSON (${describeError(error)})`, error);
    }
    const model = isRecord(spec) && isRecord(spec.model) ? spec.model : undefined;
    if (model?.type !== "WordPiece" || !isRecord(model.vocab)) {
      const kind =
        model?.type === "WordPiece"
          ? "a WordPiece tokenizer without a vocab object"
          : typeof model?.type === "string"
            ? `a ${model.type.slice(0, 40)} tokenizer`
            : "an unknown tokenizer";
      throw new HermesMemoryError({
        code: "INVALID_CONFIG",
        message: `${file} uses ${kind}; only WordPiece (BERT-style) sentence-embedding models are supported. Use a MiniLM/BGE/E5/GTE ONNX export.`,
      });
    }
    const setting = <T>(key: string, fallback: T, valid: (v: unknown) => boolean, expected: string): T => {
      const value = model[key];
      if (value === undefined || value === null) return fallback;
      if (!valid(value)) throw unusableFile(file, `model.${key} is ${JSON.stringify(value)?.slice(0, 40)}, not ${expected}`);
      return value as T;
    };
    const prefix = setting("continuing_subword_prefix", "##", (v) => typeof v === "string" && v.length <= 16, 'a short text such as "##"');
    const unkToken = setting("unk_token", "[UNK]", (v) => typeof v === "string", 'a token such as "[UNK]"');
    const maxWordChars = setting(
      "max_input_chars_per_word",
      100,
      (v) => Number.isInteger(v) && (v as number) >= 1 && (v as number) <= MAX_WORD_CHARS_LIMIT,
      `a whole number from 1 to ${MAX_WORD_CHARS_LIMIT}`,
    );
    const norm = isRecord(spec) && isRecord(spec.normalizer) ? spec.normalizer : undefined;
    const steps = norm?.normalizers;
    const lowercase =
      typeof norm?.lowercase === "boolean"
        ? norm.lowercase
        : Array.isArray(steps)
          ? steps.some((n) => isRecord(n) && n.type === "Lowercase")
          : true;
    let tokens = 0;
    for (const _ in model.vocab)
      if (++tokens > MAX_VOCAB_TOKENS)
        throw unusableFile(file, `its vocabulary has more than ${MAX_VOCAB_TOKENS} tokens, more than any real model`);
    return new WordPieceTokenizer(new Map(Object.entries(model.vocab) as Array<[string, number]>), {
      lowercase,
      prefix,
      maxWordChars,
      unkToken,
      source: file,
    });
  }

  private words(text: string): string[] {
    let t = text.normalize("NFC");
    if (this.lowercase)
      t = t
        .toLowerCase()
        .normalize("NFD")
        .replace(/\p{Mn}/gu, "");
    const out: string[] = [];
    for (const chunk of t.split(/\s+/)) {
      let current = "";
      for (const ch of chunk) {
        if (PUNCTUATION.test(ch)) {
          if (current) out.push(current);
          out.push(ch);
          current = "";
        } else current += ch;
      }
      if (current) out.push(current);
    }
    return out;
  }

  private wordPiece(word: string): number[] {
    const chars = [...word];
    if (chars.length > this.maxWordChars) return [this.unkId];
    const ids: number[] = [];
    let start = 0;
    while (start < chars.length) {
      let end = Math.min(chars.length, start + this.maxPieceChars);
      let found: number | undefined;
      while (start < end) {
        const piece = (start > 0 ? this.prefix : "") + chars.slice(start, end).join("");
        found = this.vocab.get(piece);
        if (found !== undefined) break;
        end--;
      }
      if (found === undefined) return [this.unkId];
      ids.push(found);
      start = end;
    }
    return ids;
  }

  /**
   * Encode one text as `[CLS] tokens [SEP]`, truncated to `maxLength` tokens. Only the first
   * `maxLength × (maxWordChars + 1) × 2` UTF-16 units of the text are looked at: room for
   * `maxLength` words of the longest length that is not [UNK], each with a separator, so only text
   * beyond long runs of white space or overlong words is cut early, and the cost of a text stays
   * bounded however long it is.
   */
  encode(text: string, maxLength = 256): Encoding {
    const budget = maxLength * (this.maxWordChars + 1) * 2;
    const ids = [this.clsId];
    for (const word of this.words(clipText(text, budget))) {
      if (ids.length >= maxLength - 1) break;
      for (const id of this.wordPiece(word)) {
        if (ids.length >= maxLength - 1) break;
        ids.push(id);
      }
    }
    ids.push(this.sepId);
    return { ids, mask: ids.map(() => 1) };
  }
}

/** `text` cut to `max` UTF-16 units, never between the two halves of a surrogate pair. */
function clipText(text: string, max: number): string {
  if (text.length <= max) return text;
  const last = text.charCodeAt(max - 1);
  return text.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}

/** True when `file` is a symbolic link (also a dangling one, which `existsSync` reports as missing). */
function isLink(file: string): boolean {
  try {
    return fs.lstatSync(file, { bigint: true }).isSymbolicLink();
  } catch {
    return false;
  }
}
