/**
 * `erasure`: how long erasing one user's turns and importing a JSONL file hold up the host's event
 * loop, per provider. Each row reports the total time and the longest stall a 5 ms timer saw while
 * the operation ran; the goal is a longest stall of at most 50 ms. Baselines in the same run: the
 * previous behaviour (the whole erasure in one synchronous transaction; the import's batches
 * written back to back) where it stays callable, and the stalls an idle event loop sees on this
 * machine (a busy machine delays timers by itself).
 */
import fs from "node:fs";
import path from "node:path";
import { CorpusGenerator } from "../corpus.js";
import { SuiteRecorder, type SuiteContext, type SuiteResult } from "../suite-result.js";
import { fmt } from "../table.js";
import { loadVector, settle } from "../targets.js";
import { makeTempDir } from "../temp-dir.js";
import { stallMeter } from "@hermes/test-support";

const STALL_GOAL_MS = 50;
const TARGET_USER = "erased-user";
const TURNS_PER_SESSION = 50;

interface StallReading {
  ms: number;
  longestStallMs: number;
}

/** Run `work` while `stallMeter`'s 5 ms interval records the longest gap between its ticks. */
async function measureStall(work: () => Promise<unknown> | unknown): Promise<StallReading & { value: unknown }> {
  // Let the interval start ticking before the work begins.
  await new Promise((resolve) => setTimeout(resolve, 12));
  const meter = stallMeter();
  const started = performance.now();
  const value = await work();
  const ms = performance.now() - started;
  return { ms, longestStallMs: meter.stop(), value };
}

/** The items of the store: sessions of 50 turns, every 100th session the erased user's. */
function* corpusItems(count: number, seed: number): Generator<{ content: string; sessionId: string; userId: string; createdAt: number }> {
  const gen = new CorpusGenerator(seed);
  const start = Date.now() - count * 1000;
  for (let i = 0; i < count; i++) {
    const session = Math.floor(i / TURNS_PER_SESSION);
    const userId = session % 100 === 0 ? TARGET_USER : `user-${session % 97}`;
    yield {
      content: `User: ${gen.userTurn()}\nAssistant: ${gen.assistantTurn()}`,
      sessionId: `s${session}`,
      userId,
      createdAt: start + i * 1000,
    };
  }
}

interface SqliteStoreHandle {
  insertMany(items: unknown[]): string[];
  insertNew(items: unknown[]): number;
  forgetWhere(scope: unknown): number;
}

interface SqliteProvider {
  initialize(sessionId: string, ctx: { hermesHome: string }): Promise<void>;
  forgetWhere(scope: unknown): Promise<number> | number;
  stats(): { items: number };
  shutdown(): Promise<void>;
  readonly memoryStore?: SqliteStoreHandle;
}

type SqliteClass = new (options: Record<string, unknown>) => SqliteProvider;

/** A command of a provider's CLI module, run with the host's arguments (the shape commander calls actions with). */
type CliAction = (...args: unknown[]) => Promise<void>;

/** Registers a provider CLI's commands on a minimal command object and returns their actions by name. */
function cliActions(registerCli: (command: unknown, context: unknown) => void, hermesHome: string, out: string[]): Map<string, CliAction> {
  const actions = new Map<string, CliAction>();
  const command = {
    command(spec: string) {
      const name = spec.split(" ")[0]!;
      const sub = {
        description: () => sub,
        option: () => sub,
        argument: () => sub,
        alias: () => sub,
        action: (fn: CliAction) => {
          actions.set(name, fn);
          return sub;
        },
        opts: () => ({ json: true }),
        command: command.command,
      };
      return sub;
    },
  };
  const io = { stdout: (t: string) => out.push(t), stderr: (t: string) => out.push(t), isTTY: false };
  registerCli(command, { hermesHome, providerName: path.basename(hermesHome), json: true, io });
  return actions;
}

function row(label: string, items: number, reading: StallReading, baseline: boolean): Array<string | number> {
  const met = reading.longestStallMs <= STALL_GOAL_MS;
  return [label, items, `${fmt(reading.ms)} ms`, `${fmt(reading.longestStallMs)} ms`, baseline ? "baseline" : met ? "met" : "NOT met"];
}

/** `erasure` suite. */
export async function runErasureSuite(ctx: SuiteContext): Promise<SuiteResult> {
  const rec = new SuiteRecorder("erasure", ctx.quick);
  const storeItems = ctx.quick ? 10_000 : 100_000;
  const importItems = ctx.quick ? 2_000 : 10_000;
  const erasedTurns = storeItems / 100;
  const tmp = makeTempDir("erasure");
  const rows: Array<Array<string | number>> = [];
  const data: Record<string, unknown> = { storeItems, importItems, erasedTurns, goalMs: STALL_GOAL_MS };
  try {
    const idle = await measureStall(() => new Promise((resolve) => setTimeout(resolve, 1000)));
    rows.push(row("idle event loop for 1 s (machine noise)", 0, idle, true));
    data.idle = idle.longestStallMs;

    await sqliteRows(ctx, rec, tmp.dir, { storeItems, importItems, erasedTurns }, rows, data);
    await vectorRows(ctx, rec, tmp.dir, { storeItems, importItems, erasedTurns }, rows, data);
  } finally {
    tmp.remove();
  }
  rec.table({
    title: `Event-loop stalls of erasure and import (${storeItems.toLocaleString("en-US")} items; goal: longest stall ≤ ${STALL_GOAL_MS} ms)`,
    columns: ["operation", "items", "total", "longest stall", "goal"],
    rows,
  });
  rec.note(
    `load average ${rec.result.machine.loadAverage} on ${rec.result.machine.cores} cores; a timer on an idle loop was late by up to ${fmt(Number(data.idle))} ms in this run.`,
  );
  rec.result.data = data;
  return rec.finish();
}

interface Sizes {
  storeItems: number;
  importItems: number;
  erasedTurns: number;
}

async function sqliteRows(
  ctx: SuiteContext,
  rec: SuiteRecorder,
  dir: string,
  sizes: Sizes,
  rows: Array<Array<string | number>>,
  data: Record<string, unknown>,
): Promise<void> {
  let mod: { SqliteMemoryProvider: SqliteClass };
  let cli: { registerCli: (command: unknown, context: unknown) => void };
  let kit: { parseForgetScope: (scope: unknown) => unknown };
  try {
    mod = (await import("@hermes/memory-sqlite")) as unknown as typeof mod;
    cli = (await import("@hermes/memory-sqlite/cli")) as unknown as typeof cli;
    kit = (await import("@hermes/memory-provider-kit")) as unknown as typeof kit;
  } catch (error) {
    rec.skip(`sqlite: ${(error as Error).message.split("\n")[0]}; build it with \`pnpm build\``);
    return;
  }
  const open = async (home: string): Promise<SqliteProvider> => {
    const provider = new mod.SqliteMemoryProvider({ path: path.join(home, "memory.db") });
    await provider.initialize("bench-erasure", { hermesHome: home });
    return provider;
  };
  ctx.log(`erasure: building a ${sizes.storeItems}-item SQLite store`);
  const built = path.join(dir, "sqlite-built");
  {
    const provider = await open(built);
    let batch: unknown[] = [];
    for (const item of corpusItems(sizes.storeItems, 46)) {
      batch.push({ kind: "turn", speaker: "user", ...item });
      if (batch.length === 2_000) {
        provider.memoryStore!.insertMany(batch);
        batch = [];
      }
    }
    if (batch.length > 0) provider.memoryStore!.insertMany(batch);
    await provider.shutdown();
  }
  const copyOf = (name: string): string => {
    const home = path.join(dir, name);
    fs.cpSync(built, home, { recursive: true });
    return home;
  };

  ctx.log("erasure: sqlite, one user's turns in one transaction (previous behaviour)");
  {
    const provider = await open(copyOf("sqlite-once"));
    const scope = kit.parseForgetScope({ userId: TARGET_USER });
    const reading = await measureStall(() => provider.memoryStore!.forgetWhere(scope));
    rows.push(row("sqlite forgetWhere({userId}), one transaction (previous)", Number(reading.value), reading, true));
    data.sqliteEraseOnce = reading;
    await provider.shutdown();
  }
  ctx.log("erasure: sqlite, one user's turns in steps (forgetWhere)");
  {
    const provider = await open(copyOf("sqlite-steps"));
    const reading = await measureStall(() => settle(provider.forgetWhere({ userId: TARGET_USER })));
    rows.push(row("sqlite forgetWhere({userId})", Number(reading.value), reading, false));
    rec.goal(
      `sqlite erasure: longest stall ≤ ${STALL_GOAL_MS} ms`,
      `${fmt(reading.longestStallMs)} ms`,
      reading.longestStallMs <= STALL_GOAL_MS,
    );
    if (Number(reading.value) !== sizes.erasedTurns)
      rec.note(`sqlite erased ${String(reading.value)} items, expected ${sizes.erasedTurns}`);
    data.sqliteEraseSteps = reading;
    await provider.shutdown();
  }

  // The import file: `importItems` records in the export format.
  const file = path.join(dir, "import.jsonl");
  const lines: string[] = [];
  for (const item of corpusItems(sizes.importItems, 4646)) {
    lines.push(
      JSON.stringify({
        kind: "turn",
        content: item.content,
        sessionId: item.sessionId,
        userId: item.userId,
        createdAt: new Date(item.createdAt).toISOString(),
      }),
    );
  }
  fs.writeFileSync(file, `${lines.join("\n")}\n`);

  ctx.log("erasure: sqlite, the import's batches written back to back (previous behaviour)");
  {
    const provider = await open(copyOf("sqlite-import-once"));
    const records = lines.map((line) => ({
      kind: "turn",
      speaker: "user",
      ...(JSON.parse(line) as Record<string, unknown>),
      createdAt: undefined,
    }));
    const reading = await measureStall(() => {
      let stored = 0;
      for (let i = 0; i < records.length; i += 500) stored += provider.memoryStore!.insertNew(records.slice(i, i + 500));
      return stored;
    });
    rows.push(row("sqlite import, 500-item batches back to back (previous)", Number(reading.value), reading, true));
    data.sqliteImportOnce = reading;
    await provider.shutdown();
  }
  ctx.log("erasure: sqlite, `hermes-memory sqlite import` into the store");
  {
    const home = copyOf("sqlite-import");
    fs.writeFileSync(
      path.join(home, "config.yaml"),
      `memory:\n  provider: sqlite\n  sqlite:\n    path: ${JSON.stringify(path.join(home, "memory.db"))}\n`,
    );
    const out: string[] = [];
    const actions = cliActions(cli.registerCli, home, out);
    const reading = await measureStall(() => actions.get("import")!(file, { json: true }, { opts: () => ({ json: true }) }));
    const result = JSON.parse(out.join("\n") || "{}") as { imported?: number };
    rows.push(row("sqlite import (CLI)", result.imported ?? 0, reading, false));
    rec.goal(
      `sqlite import: longest stall ≤ ${STALL_GOAL_MS} ms`,
      `${fmt(reading.longestStallMs)} ms`,
      reading.longestStallMs <= STALL_GOAL_MS,
    );
    data.sqliteImport = { ...reading, result };
  }
}

interface VectorProvider {
  initialize(sessionId: string, ctx: { hermesHome: string }): Promise<void>;
  importItems(items: Iterable<unknown>): Promise<number>;
  forgetWhere(scope: unknown): Promise<number>;
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

async function vectorRows(
  ctx: SuiteContext,
  rec: SuiteRecorder,
  dir: string,
  sizes: Sizes,
  rows: Array<Array<string | number>>,
  data: Record<string, unknown>,
): Promise<void> {
  const vector = await loadVector(["VectorMemoryProvider"]);
  if (!vector.ok) {
    rec.skip(`vector: ${vector.reason}`);
    return;
  }
  const VectorClass = vector.value.VectorMemoryProvider as new (options: Record<string, unknown>) => VectorProvider;
  const exported = function* (count: number, seed: number): Generator<unknown> {
    let i = 0;
    for (const item of corpusItems(count, seed)) {
      yield {
        id: `item-${seed}-${i++}`,
        content: item.content,
        metadata: { kind: "turn", session_id: item.sessionId, user_id: item.userId, created_at: item.createdAt },
      };
    }
  };
  const home = path.join(dir, "vector");
  const provider = new VectorClass({ hybrid: true, env: {} });
  await provider.initialize("bench-erasure", { hermesHome: home });
  try {
    ctx.log(`erasure: vector, importing ${sizes.storeItems} items (local store, hashing embedder)`);
    const build = await measureStall(() => provider.importItems(exported(sizes.storeItems - sizes.importItems, 46)));
    data.vectorBuild = build;
    const imported = await measureStall(() => provider.importItems(exported(sizes.importItems, 4646)));
    rows.push(row("vector importItems (CLI import)", Number(imported.value), imported, false));
    rec.goal(
      `vector import: longest stall ≤ ${STALL_GOAL_MS} ms`,
      `${fmt(imported.longestStallMs)} ms`,
      imported.longestStallMs <= STALL_GOAL_MS,
    );
    data.vectorImport = imported;
    await provider.flush();
    ctx.log("erasure: vector, one user's turns (forgetWhere)");
    const erased = await measureStall(() => provider.forgetWhere({ userId: TARGET_USER }));
    rows.push(row("vector forgetWhere({userId})", Number(erased.value), erased, false));
    rec.goal(
      `vector erasure: longest stall ≤ ${STALL_GOAL_MS} ms`,
      `${fmt(erased.longestStallMs)} ms`,
      erased.longestStallMs <= STALL_GOAL_MS,
    );
    data.vectorErase = erased;
  } finally {
    await provider.shutdown();
  }
}
