/**
 * Conversational indexing, shared by every provider that stores chat turns: a turn's full-text
 * document also holds, as separately weighted columns, the text of the turns just before it in its
 * session and the session's date. A question is often answered by a turn whose own words do not
 * match ("Yes, last Saturday!") but whose preceding turns do, and questions often name the date.
 */

/** How many preceding turns of the same session are indexed with a turn. */
export const CONTEXT_TURNS = 2;

/**
 * BM25 column weights of a turn's document: its own text, its speaker, the previous turn, the turn
 * before that, and the session date. Context columns weigh less than the turn's own words, so a
 * turn that says the words itself still ranks first.
 */
export const TURN_COLUMN_WEIGHTS = { content: 1.0, speaker: 0.25, prev1: 0.3, prev2: 0.15, date: 0.25 } as const;

/** Column weights of a turn's document (see `TURN_COLUMN_WEIGHTS`). */
export interface TurnColumnWeights {
  content: number;
  speaker: number;
  prev1: number;
  prev2: number;
  date: number;
}

/** The context columns of a turn: the texts of the previous and second previous turn of its session. */
export interface TurnContext {
  prev1: string;
  prev2: string;
}

/** No context (facts, checkpoints, turns without a session or first in their session). */
export const NO_CONTEXT: TurnContext = { prev1: "", prev2: "" };

/**
 * Most characters of a preceding turn indexed as context (its first characters): indexing whole
 * long turns again would make every write several times dearer, while what links a reply to the
 * turn before it is mostly near that turn's start.
 */
export const CONTEXT_CHARS = 160;

/**
 * Context columns from the texts of the preceding turns of the same session, most recent first
 * (only the first `CONTEXT_TURNS` are used), each cut to `CONTEXT_CHARS`.
 */
export function turnContext(previousMostRecentFirst: readonly string[]): TurnContext {
  return { prev1: clipContext(previousMostRecentFirst[0] ?? ""), prev2: clipContext(previousMostRecentFirst[1] ?? "") };
}

/**
 * The first `CONTEXT_CHARS` characters (Unicode code points) of `text`: the same prefix SQL's
 * `substr(text, 1, CONTEXT_CHARS)` takes, so context filled in SQL (migrations, triggers) and in
 * code is identical, and a character outside the BMP is never cut in half.
 */
export function clipContext(text: string): string {
  if (text.length <= CONTEXT_CHARS) return text;
  let end = 0;
  for (let chars = 0; chars < CONTEXT_CHARS && end < text.length; chars++) {
    const unit = text.charCodeAt(end);
    const pair = unit >= 0xd800 && unit <= 0xdbff && end + 1 < text.length;
    const low = pair ? text.charCodeAt(end + 1) : 0;
    end += pair && low >= 0xdc00 && low <= 0xdfff ? 2 : 1;
  }
  return text.slice(0, end);
}

/**
 * SQL for a context column derived from the turn it names: the first `CONTEXT_CHARS` characters of
 * the text of the row of `table` whose `id` is the value of `idSql` (e.g. `i.prev_id`), or '' when
 * there is none (NULL id, row deleted). A store that keeps only the ids of each turn's previous
 * turns reads its context columns through this, the same text `clipContext` cuts in code.
 */
export function itemsContextSql(idSql: string, table = "items", id = "id", content = "content"): string {
  return `COALESCE((SELECT substr(ctx.${content}, 1, ${CONTEXT_CHARS}) FROM ${table} ctx WHERE ctx.${id} = ${idSql}), '')`;
}

const MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

/**
 * The date indexed with a turn: the host's own date text when its metadata carries one as
 * `metadata.date` (a session date as the host writes it, e.g. "1:56 pm on 8 May, 2023"), otherwise
 * the turn's creation day in UTC ("8 May 2023"). Only turns get a date; other kinds get "".
 */
export function turnDateText(kind: string, metadata: Record<string, unknown> | undefined, createdAt: number): string {
  if (kind !== "turn") return "";
  const given = metadata?.date;
  if (typeof given === "string" && given.trim() !== "") return given.trim().slice(0, 200);
  if (!Number.isFinite(createdAt)) return "";
  const day = Math.floor(createdAt / DAY_MS);
  if (day === lastDay) return lastDayText;
  const d = new Date(day * DAY_MS);
  if (!Number.isFinite(d.getTime())) return "";
  lastDay = day;
  lastDayText = `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
  return lastDayText;
}

const DAY_MS = 86_400_000;
// The last day formatted: consecutive turns are almost always of the same day.
let lastDay = NaN;
let lastDayText = "";

/** Sessions whose last turns a `RecentTurns` keeps by default. */
export const RECENT_SESSIONS = 256;

/**
 * The last turns of recently written sessions, most recent first, as one connection wrote them:
 * the context of each session's next turn without a query per turn. Each turn is what the
 * caller keeps of it: its text (the default), or e.g. its id and text. Trusted only while no
 * other connection has committed: call `sync` with `PRAGMA data_version` at the start of every
 * write transaction, and `clear` after a delete, an update of stored text or a rolled-back write.
 * Keeps at most `maxSessions` sessions (the least recently written is dropped).
 */
export class RecentTurns<Turn = string> {
  private readonly tails = new Map<string, Turn[]>();
  private version = -1;

  constructor(private readonly maxSessions = RECENT_SESSIONS) {}

  /** Forget everything when `dataVersion` (`PRAGMA data_version`) changed since the last call. */
  sync(dataVersion: number): void {
    if (dataVersion !== this.version) this.tails.clear();
    this.version = dataVersion;
  }

  /**
   * `session`'s last `CONTEXT_TURNS` turns, most recent first: the remembered ones, else
   * `load(session)` (the stored ones). Pass their texts to `turnContext`, and the result to `push`
   * once the turn is stored.
   */
  previous(session: string, load: (session: string) => Turn[]): Turn[] {
    const remembered = this.tails.get(session);
    if (remembered === undefined) return load(session);
    // Taken out, so that `push` puts the session back as the most recently written.
    this.tails.delete(session);
    return remembered;
  }

  /** Remember that `turn` was stored in `session` after the turns `previous`. */
  push(session: string, turn: Turn, previous: readonly Turn[]): void {
    this.tails.set(session, [turn, ...previous.slice(0, CONTEXT_TURNS - 1)]);
    if (this.tails.size > this.maxSessions) this.tails.delete(this.tails.keys().next().value!);
  }

  /** Forget every session (after a delete, a text update or a rolled-back write). */
  clear(): void {
    this.tails.clear();
  }
}
