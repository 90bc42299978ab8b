import fs from "node:fs";

/**
 * LoCoMo loader and retrieval protocol (the paper's "dialog" setting): one memory item per turn,
 * the question verbatim as the query, recall@k = share of a question's evidence ids among the top k
 * hits. Reads any file of the same format (the full benchmark has ten conversations).
 */

/** The categories of LoCoMo questions. */
export const LOCOMO_CATEGORIES: Record<number, string> = {
  1: "multi-hop",
  2: "temporal",
  3: "open-domain",
  4: "single-hop",
  5: "adversarial",
};

/** The k values reported. */
export const RECALL_KS = [5, 10, 25, 50] as const;

/** One memory item, ready for `remember()`. */
export interface LocomoTurn {
  content: string;
  sessionId: string;
  diaId: string;
  speaker: string;
  date: string;
}

/** One question with its usable evidence (ids that match no turn are dropped). */
export interface LocomoQuestion {
  question: string;
  category: number;
  evidence: string[];
}

export interface LocomoConversation {
  sampleId: string;
  turns: LocomoTurn[];
  questions: LocomoQuestion[];
  /** Questions dropped because none of their evidence ids matched a turn. */
  droppedQuestions: number;
}

interface RawTurn {
  speaker?: unknown;
  dia_id?: unknown;
  text?: unknown;
  blip_caption?: unknown;
}

/** Splits evidence strings, tolerating the malformed ones ("D8:6; D9:17"). */
export function parseEvidence(evidence: unknown): string[] {
  if (!Array.isArray(evidence)) return [];
  return evidence.flatMap((e) => (typeof e === "string" ? e.split(/[;\s]+/).filter((s) => s.length > 0) : []));
}

/** Formats a turn's content exactly as the protocol prescribes. */
export function turnContent(speaker: string, text: string, blipCaption?: string): string {
  return `${speaker} said, "${text}"` + (blipCaption ? ` and shared ${blipCaption}` : "");
}

/** Parses a LoCoMo JSON document (already decoded). Throws with a remedy on a wrong shape. */
export function parseLocomo(doc: unknown): LocomoConversation[] {
  if (!Array.isArray(doc)) throw new Error("LoCoMo data must be a JSON array of conversations (see data/locomo/README.md)");
  return doc.map((item: Record<string, unknown>, idx) => {
    const conv = item.conversation as Record<string, unknown> | undefined;
    if (!conv || typeof conv !== "object") throw new Error(`LoCoMo item ${idx} has no "conversation" object`);
    const sessionNumbers = Object.keys(conv)
      .map((k) => /^session_(\d+)$/.exec(k)?.[1])
      .filter((n): n is string => n !== undefined)
      .map(Number)
      .sort((a, b) => a - b);
    const turns: LocomoTurn[] = [];
    for (const n of sessionNumbers) {
      const session = conv[`session_${n}`];
      if (!Array.isArray(session)) continue;
      const date = typeof conv[`session_${n}_date_time`] === "string" ? (conv[`session_${n}_date_time`] as string) : "";
      for (const t of session as RawTurn[]) {
        if (typeof t.dia_id !== "string" || typeof t.text !== "string") continue;
        const speaker = typeof t.speaker === "string" ? t.speaker : "";
        const caption = typeof t.blip_caption === "string" && t.blip_caption.length > 0 ? t.blip_caption : undefined;
        turns.push({ content: turnContent(speaker, t.text, caption), sessionId: `session_${n}`, diaId: t.dia_id, speaker, date });
      }
    }
    const known = new Set(turns.map((t) => t.diaId));
    const questions: LocomoQuestion[] = [];
    let dropped = 0;
    for (const q of (Array.isArray(item.qa) ? item.qa : []) as Array<Record<string, unknown>>) {
      if (typeof q.question !== "string") continue;
      const evidence = [...new Set(parseEvidence(q.evidence).filter((e) => known.has(e)))];
      if (evidence.length === 0) {
        dropped++;
        continue;
      }
      questions.push({ question: q.question, category: Number(q.category), evidence });
    }
    return { sampleId: typeof item.sample_id === "string" ? item.sample_id : `conv-${idx}`, turns, questions, droppedQuestions: dropped };
  });
}

/** Reads and parses a LoCoMo file. */
export function loadLocomo(file: string): LocomoConversation[] {
  return parseLocomo(JSON.parse(fs.readFileSync(file, "utf8")));
}

/** recall@k for each k: share of `evidence` among the first k ranked dia ids. */
export function recallAtKs(evidence: readonly string[], ranked: readonly string[], ks: readonly number[] = RECALL_KS): number[] {
  return ks.map((k) => {
    const top = new Set(ranked.slice(0, k));
    let hit = 0;
    for (const e of evidence) if (top.has(e)) hit++;
    return evidence.length === 0 ? 0 : hit / evidence.length;
  });
}

/** Accumulates per-category and overall mean recall@k (in percent). */
export class RecallAccumulator {
  private readonly sums = new Map<string, { n: number; sums: number[] }>();

  constructor(readonly ks: readonly number[] = RECALL_KS) {}

  add(category: number, recalls: readonly number[]): void {
    for (const key of [LOCOMO_CATEGORIES[category] ?? `category ${category}`, "overall"]) {
      let entry = this.sums.get(key);
      if (!entry) this.sums.set(key, (entry = { n: 0, sums: this.ks.map(() => 0) }));
      entry.n++;
      recalls.forEach((r, i) => (entry.sums[i] = (entry.sums[i] as number) + r));
    }
  }

  /** Mean recall per row in percent, rows in category order then "overall". */
  rows(): Array<{ label: string; n: number; recall: number[] }> {
    const order = [...Object.values(LOCOMO_CATEGORIES), "overall"];
    const keys = [...this.sums.keys()].sort((a, b) => {
      const ia = order.indexOf(a);
      const ib = order.indexOf(b);
      return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib);
    });
    return keys.map((label) => {
      const e = this.sums.get(label)!;
      return { label, n: e.n, recall: e.sums.map((s) => (100 * s) / e.n) };
    });
  }
}
