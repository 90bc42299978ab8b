import fs from "node:fs";
import path from "node:path";
import { HermesMemoryError } from "@hermes/memory-core";

/** Token ids and attention mask of one text. */
export interface Encoding {
  ids: number[];
  mask: number[];
}

interface TokenizerJson {
  model?: { type?: string; vocab?: Record<string, number>; unk_token?: string; continuing_subword_prefix?: string; max_input_chars_per_word?: number };
  normalizer?: { type?: string; lowercase?: boolean; strip_accents?: boolean | null; normalizers?: Array<{ type?: string }> } | null;
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
  readonly unkId: number;
  readonly clsId: number;
  readonly sepId: number;
  readonly padId: number;

  constructor(vocab: Map<string, number>, options: { lowercase?: boolean; prefix?: string; maxWordChars?: number; unkToken?: string } = {}) {
    this.vocab = vocab;
    this.lowercase = options.lowercase ?? true;
    this.prefix = options.prefix ?? "##";
    this.maxWordChars = options.maxWordChars ?? 100;
    const need = (token: string): number => {
      const id = vocab.get(token);
      if (id === undefined) {
        throw new HermesMemoryError({ code: "INVALID_CONFIG", message: `The tokenizer vocabulary has no ${token} token; memory.vector.onnx_model_dir must hold a BERT-style (WordPiece) sentence-embedding model.` });
      }
      return id;
    };
    this.unkId = need(options.unkToken ?? "[UNK]");
    this.clsId = need("[CLS]");
    this.sepId = need("[SEP]");
    this.padId = vocab.get("[PAD]") ?? 0;
  }

  /** Load `tokenizer.json` (preferred) or `vocab.txt` from a model directory. */
  static fromDirectory(dir: string): WordPieceTokenizer {
    const jsonFile = path.join(dir, "tokenizer.json");
    if (fs.existsSync(jsonFile)) {
      const spec = JSON.parse(fs.readFileSync(jsonFile, "utf8")) as TokenizerJson;
      if (spec.model?.type !== "WordPiece" || !spec.model.vocab) {
        throw new HermesMemoryError({
          code: "INVALID_CONFIG",
          message: `${jsonFile} uses a ${spec.model?.type ?? "unknown"} tokenizer; only WordPiece (BERT-style) sentence-embedding models are supported. Use a MiniLM/BGE/E5/GTE ONNX export.`,
        });
      }
      const norm = spec.normalizer;
      const lowercase = norm?.lowercase ?? (norm?.normalizers?.some((n) => n.type === "Lowercase") ?? true);
      return new WordPieceTokenizer(new Map(Object.entries(spec.model.vocab)), {
        lowercase,
        prefix: spec.model.continuing_subword_prefix ?? "##",
        maxWordChars: spec.model.max_input_chars_per_word ?? 100,
        unkToken: spec.model.unk_token ?? "[UNK]",
      });
    }
    const vocabFile = path.join(dir, "vocab.txt");
    if (fs.existsSync(vocabFile)) {
      const lines = fs.readFileSync(vocabFile, "utf8").split(/\r?\n/);
      return new WordPieceTokenizer(new Map(lines.map((token, i) => [token, i] as [string, number]).filter(([t]) => t !== "")));
    }
    throw new HermesMemoryError({
      code: "INVALID_CONFIG",
      message: `No tokenizer.json or vocab.txt in ${dir}. memory.vector.onnx_model_dir must be a local sentence-embedding model directory (ONNX + tokenizer).`,
    });
  }

  private words(text: string): string[] {
    let t = text.normalize("NFC");
    if (this.lowercase) t = t.toLowerCase().normalize("NFD").replace(/\p{Mn}/gu, "");
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
      let end = chars.length;
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

  /** Encode one text as `[CLS] tokens [SEP]`, truncated to `maxLength` tokens. */
  encode(text: string, maxLength = 256): Encoding {
    const ids = [this.clsId];
    for (const word of this.words(text)) {
      for (const id of this.wordPiece(word)) {
        if (ids.length >= maxLength - 1) break;
        ids.push(id);
      }
    }
    ids.push(this.sepId);
    return { ids, mask: ids.map(() => 1) };
  }
}
