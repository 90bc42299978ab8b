import {
  HermesMemoryError,
  type ForgetScope,
  type MemoryFilter,
  type MemoryHit,
  type MemoryKind,
  type ProviderCliIo,
} from "@hermes/memory-core";
import {
  MEMORY_ITEM_KINDS,
  checkJsonlTarget,
  parseForgetScope,
  parseMemoryFilter,
  parseMemoryItem,
  readJsonlFileSync,
  StepPacer,
  toEpochMs,
  writeJsonlFile,
  yieldToEventLoop,
} from "@hermes/memory-provider-kit";
import type { DoctorReport, ExportRecord, NewItem, StoredItem } from "./memory-store.js";
import { itemDigest, undatedTurnDigest } from "./item-digest.js";
import { SqliteMemoryProvider } from "./sqlite-memory-provider.js";
import { loadSqliteConfig, type SqliteProviderOptions } from "./config.js";
import { closeDatabase, openDatabase, readSchemaVersion, SCHEMA_VERSION } from "./database.js";

/** Where command output goes (injectable for tests). */
export type CommandIo = ProviderCliIo;

/** What every command needs: the profile home and, optionally, explicit provider settings. */
export interface CommandContext {
  hermesHome: string;
  providerName?: string;
  /** Settings overriding config.yaml (tests); normally read from `memory.sqlite.*`. */
  providerOptions?: SqliteProviderOptions;
  io?: CommandIo;
}

/** Options shared by all commands. */
export interface JsonOption {
  json?: boolean;
}

/** Default IO: process stdout/stderr. */
export const processIo: CommandIo = {
  stdout: (t) => process.stdout.write(t.endsWith("\n") ? t : `${t}\n`),
  stderr: (t) => process.stderr.write(t.endsWith("\n") ? t : `${t}\n`),
  get isTTY() {
    return Boolean(process.stderr.isTTY);
  },
};

/**
 * Open the profile's database for one command, run `fn`, and close it again (flushing first).
 * Errors propagate (typed `HermesMemoryError` with a remedy).
 */
export async function withProvider<T>(ctx: CommandContext, fn: (provider: SqliteMemoryProvider) => Promise<T> | T): Promise<T> {
  const provider = new SqliteMemoryProvider(ctx.providerOptions ?? {});
  await provider.initialize("cli", { hermesHome: ctx.hermesHome, platform: "cli" });
  try {
    return await fn(provider);
  } finally {
    await provider.shutdown();
  }
}

function io(ctx: CommandContext): CommandIo {
  return ctx.io ?? processIo;
}

function emit(ctx: CommandContext, options: JsonOption, value: unknown, human: () => string): void {
  io(ctx).stdout(options.json ? JSON.stringify(value, null, 2) : human());
}

function parseKind(kind: unknown): MemoryKind | undefined {
  if (kind === undefined || kind === null || kind === "") return undefined;
  if (typeof kind === "string" && (MEMORY_ITEM_KINDS as readonly string[]).includes(kind)) return kind as MemoryKind;
  throw new HermesMemoryError({
    code: "INVALID_ARGUMENT",
    message: `--kind must be one of ${MEMORY_ITEM_KINDS.join(", ")} (got ${String(kind)}).`,
  });
}

function parsePositiveInt(value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) {
    throw new HermesMemoryError({ code: "INVALID_ARGUMENT", message: `${name} must be a positive integer (got ${String(value)}).` });
  }
  return n;
}

const oneLine = (text: string, max = 160) => {
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
};

/** `stats`: item counts by kind, sessions, database path and size. */
export async function statsCommand(ctx: CommandContext, options: JsonOption = {}): Promise<Record<string, unknown>> {
  const stats = await withProvider(ctx, (p) => p.stats());
  emit(ctx, options, stats, () =>
    [
      `database: ${stats.location}`,
      `items:    ${stats.items} (turns ${stats.byKind.turn}, facts ${stats.byKind.fact}, checkpoints ${stats.byKind.checkpoint})`,
      `sessions: ${stats.sessions ?? 0}`,
      `size:     ${formatBytes(stats.sizeBytes ?? 0)}`,
    ].join("\n"),
  );
  return stats;
}

/** A `--filter` JSON text as a filter object (`INVALID_ARGUMENT` when it is not a JSON object). */
function parseFilterOption(text: string | undefined): Record<string, unknown> {
  if (text === undefined) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `--filter must be a JSON object, e.g. '{"tags":{"any":["work"]}}' (${(error as Error).message}).`,
    });
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new HermesMemoryError({ code: "INVALID_ARGUMENT", message: `--filter must be a JSON object, e.g. '{"tags":{"any":["work"]}}'.` });
  }
  return value as Record<string, unknown>;
}

/** `search <query> [--limit] [--kind] [--filter <json>]`: ranked hits among the items passing the filter. */
export async function searchCommand(
  ctx: CommandContext,
  query: string,
  options: JsonOption & { limit?: number | string; kind?: string; filter?: string } = {},
): Promise<MemoryHit[]> {
  const limit = parsePositiveInt(options.limit, "--limit", 10);
  const kind = parseKind(options.kind);
  const filter = { ...parseFilterOption(options.filter), ...(kind ? { kind } : {}) } as MemoryFilter;
  // Validated before the database is opened.
  parseMemoryFilter(filter, { what: "--filter" });
  const hits = await withProvider(ctx, (p) => p.search(query, { ...filter, limit }));
  emit(ctx, options, hits, () =>
    hits.length === 0
      ? "No matches."
      : hits.map((h) => `${h.id.padStart(6)}  ${h.score.toFixed(3)}  [${h.kind}] ${oneLine(h.content)}`).join("\n"),
  );
  return hits;
}

/** `list [--limit] [--kind]`: newest items first. */
export async function listCommand(
  ctx: CommandContext,
  options: JsonOption & { limit?: number | string; kind?: string } = {},
): Promise<StoredItem[]> {
  const limit = parsePositiveInt(options.limit, "--limit", 20);
  const kind = parseKind(options.kind);
  const items = await withProvider(ctx, (p) => p.list({ limit, ...(kind ? { kind } : {}) }));
  emit(ctx, options, items, () =>
    items.length === 0
      ? "No items."
      : items.map((i) => `${i.id.padStart(6)}  ${i.createdAt.slice(0, 19)}  [${i.kind}] ${oneLine(i.content)}`).join("\n"),
  );
  return items;
}

/** Options of `forget`: the scope (all given conditions must hold) and what to do. */
export interface ForgetOptions extends JsonOption {
  user?: string;
  session?: string;
  kind?: string;
  tag?: string;
  /** A JSON filter object (any `MemoryFilter` key). */
  filter?: string;
  /** Erase without asking. */
  yes?: boolean;
  /** Erase also when the scope matches every item of the database; alone, erase every item (`confirmAll`). */
  all?: boolean;
  /** Afterwards merge the FTS index and truncate the WAL so the erased text leaves the file. */
  compact?: boolean;
}

/** What `forget` did. */
export interface ForgetResult {
  /** The one id given (absent for a filter-only scope). */
  id?: string;
  /** How many items were erased. */
  erased: number;
  /** Whether anything was erased (the CLI exits 1 when not). */
  forgotten: boolean;
  /** Sizes after `--compact`. */
  compact?: { beforeBytes: number; afterBytes: number; walTruncated: boolean };
}

/**
 * `forget [id] [--user] [--session] [--kind] [--tag] [--filter <json>] [--all] [--yes] [--compact]`:
 * erase one item by id, or every item in the scope (all conditions must hold). A scope wider than
 * one id first counts the items and asks `io.confirm`; without a confirmation (none given, or no
 * way to ask) and without `--yes` nothing is erased and it fails saying to pass `--yes`. A scope
 * without an id that matches every item is refused unless `--all` is given (`--all` alone erases
 * every item). `--compact` then merges the FTS index and truncates the WAL so the erased text
 * leaves the file.
 */
export async function forgetCommand(ctx: CommandContext, id: string | undefined, options: ForgetOptions = {}): Promise<ForgetResult> {
  const kind = parseKind(options.kind);
  const scope = {
    ...parseFilterOption(options.filter),
    ...(id !== undefined && id !== "" ? { ids: [id] } : {}),
    ...(options.user !== undefined ? { userId: options.user } : {}),
    ...(options.session !== undefined ? { sessionId: options.session } : {}),
    ...(kind ? { kind } : {}),
    ...(options.tag !== undefined ? { tags: { any: [options.tag] } } : {}),
    ...(options.all ? { confirmAll: true } : {}),
  } as ForgetScope;
  if (Object.keys(scope).length === 0) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: "forget needs an id or a scope: --user, --session, --kind, --tag, --filter <json>, or --all for every item.",
    });
  }
  const { filter: parsed } = parseForgetScope(scope, "forget scope");
  const oneId = Object.keys(parsed).length === 1 && parsed.ids?.length === 1;
  const result = await withProvider(ctx, async (p): Promise<ForgetResult> => {
    if (!oneId) {
      const count = p.countWhere(scope);
      if (count === 0) return { erased: 0, forgotten: false };
      // The provider refuses it too (in its transaction); this says it in the CLI's words.
      if (!options.all && parsed.ids === undefined && count >= p.countWhere({ confirmAll: true })) {
        throw new HermesMemoryError({
          code: "INVALID_ARGUMENT",
          message: `forget: the scope matches all ${count} item(s) of the database; nothing was erased. Add --all to erase every item, or narrow the scope.`,
        });
      }
      const confirm = options.yes ? undefined : io(ctx).confirm;
      const confirmed = options.yes || (confirm ? await confirm(`Erase ${count} item(s) permanently?`) : false);
      if (!confirmed) {
        throw new HermesMemoryError({
          code: "INVALID_ARGUMENT",
          message: `forget would erase ${count} item(s) and was not confirmed; nothing was erased. Pass --yes to erase them.`,
        });
      }
    }
    const erased = await p.forgetWhere(scope);
    const out: ForgetResult = { erased, forgotten: erased > 0 };
    if (options.compact) out.compact = p.memoryStore!.compact();
    return out;
  });
  if (oneId) {
    result.id = parsed.ids![0]!;
    if (!result.forgotten) {
      throw new HermesMemoryError({
        code: "ITEM_NOT_FOUND",
        message: `No item with id ${result.id}; nothing was erased. \`hermes-memory sqlite list\` shows the stored items and their ids.`,
      });
    }
  }
  emit(ctx, options, result, () => {
    const what = oneId ? `Forgot item ${result.id}.` : `Erased ${result.erased} item(s).`;
    const compacted = result.compact
      ? ` Compacted: ${formatBytes(result.compact.beforeBytes)} → ${formatBytes(result.compact.afterBytes)}${result.compact.walTruncated ? "" : " (the WAL is in use by another process; run again when the agent is idle)"}.`
      : "";
    return what + compacted;
  });
  return result;
}

/** `purge`: delete every expired item now. */
export async function purgeCommand(ctx: CommandContext, options: JsonOption = {}): Promise<{ purged: number }> {
  const purged = await withProvider(ctx, (p) => p.purgeExpired());
  const result = { purged };
  emit(ctx, options, result, () => `Purged ${purged} expired item(s).`);
  return result;
}

/** `export [file]`: every item as JSONL (to stdout without a file). */
export async function exportCommand(
  ctx: CommandContext,
  file: string | undefined,
  options: JsonOption = {},
): Promise<{ count: number; file: string | null }> {
  return withProvider(ctx, async (p) => {
    const store = p.memoryStore!;
    let count = 0;
    if (file) {
      // The kit refuses a directory, device, pipe or missing folder before writing anything.
      const target = checkJsonlTarget(file);
      count = writeJsonlFile(target, store.exportRecords());
      const result = { count, file: target };
      emit(ctx, options, result, () => `Exported ${count} item(s) to ${target}.`);
      return result;
    }
    // Without a file the JSONL itself is the output, so --json has nothing to add.
    for (const record of store.exportRecords()) {
      io(ctx).stdout(JSON.stringify(record));
      count++;
    }
    return { count, file: null };
  });
}

/** Result of `import`. */
export interface ImportResult {
  imported: number;
  skipped: number;
  invalid: number;
  errors: string[];
}

/**
 * `import <file>`: read JSONL written by `export` (or by hand: `{kind?, content, ...}` per line).
 * Idempotent: records whose digest is already stored are skipped (a record without a digest gets
 * the one the store would give it; a turn without a creation time gets `undatedTurnDigest`).
 * `imported` counts the items this run stored: records stored meanwhile by another process (two
 * imports of one file at once) count as skipped. Shows the host's progress bar (`io.progress`) unless `--json`.
 * Records are stored in steps of about 15 ms (one transaction each) with the event loop served
 * between them.
 */
export async function importCommand(ctx: CommandContext, file: string, options: JsonOption = {}): Promise<ImportResult> {
  const lines = readJsonlFileSync(file, "hermes-memory sqlite export");
  const result: ImportResult = { imported: 0, skipped: 0, invalid: 0, errors: [] };
  // The host draws the bar (and erases it, also when the import fails); none under --json.
  const bar = options.json ? undefined : io(ctx).progress?.("Importing");
  let done = 0;
  await withProvider(ctx, async (p) => {
    const store = p.memoryStore!;
    bar?.update(0, lines.length);
    let batch: NewItem[] = [];
    let turnDigests: Set<string> | undefined;
    const seen = new Set<string>();
    // How many undated turns saying exactly the same came before each one in this file.
    const undated = new Map<string, number>();
    const commit = () => {
      if (batch.length === 0) return;
      // Counted from what the transaction stored: a record stored meanwhile by another process
      // (after the checks below) is skipped by the digest's unique index.
      const stored = store.insertNew(batch);
      result.imported += stored;
      result.skipped += batch.length - stored;
      batch = [];
    };
    // Lines are read and stored in steps sized by measured time, with the event loop served
    // between them: the host's timers and I/O (its progress bar, signals) run during a long import.
    const pacer = new StepPacer({ initial: 64, max: 500 });
    let stepStarted = performance.now();
    let stepLines = 0;
    await store.writingInSteps(async () => {
      for (const line of lines) {
        const item = "error" in line ? line.error : parseRecord(line.value, undated);
        if (typeof item === "string") {
          result.invalid++;
          if (result.errors.length < 20) result.errors.push(`line ${line.lineNo}: ${item}`);
        } else if (item.kind === "turn" && turnDigests === undefined) {
          turnDigests = await store.turnDigests();
          stepStarted = performance.now();
        }
        if (typeof item !== "string") {
          if (seen.has(item.digest!) || (item.kind === "turn" ? turnDigests!.has(item.digest!) : store.hasDigest(item.digest!))) {
            result.skipped++;
          } else {
            seen.add(item.digest!);
            batch.push(item);
          }
        }
        bar?.update(++done, lines.length);
        if (++stepLines >= pacer.size) {
          commit();
          pacer.record(stepLines, performance.now() - stepStarted);
          stepLines = 0;
          await yieldToEventLoop();
          stepStarted = performance.now();
        }
      }
      commit();
    });
  }).finally(() => bar?.stop());
  emit(ctx, options, result, () =>
    [`Imported ${result.imported} item(s), skipped ${result.skipped} already present, ${result.invalid} invalid.`, ...result.errors].join(
      "\n",
    ),
  );
  return result;
}

/**
 * One import record as an item, or why it was refused. Fields are checked like `remember()`'s
 * (the kit's `parseMemoryItem`): a field of the wrong type (tags that are not a list of text,
 * metadata that is not an object, an unreadable `expiresAt` or `createdAt`) refuses the line
 * instead of being dropped or coerced, so an item is never stored without its expiry or with
 * mangled tags.
 */
function parseRecord(value: unknown, undated: Map<string, number>): NewItem | string {
  if (!value || typeof value !== "object" || Array.isArray(value)) return "not a JSON object";
  const r = value as Partial<ExportRecord> & Record<string, unknown>;
  let parsed: ReturnType<typeof parseMemoryItem>;
  let createdAt: number | undefined;
  try {
    parsed = parseMemoryItem(r, "record");
    if (r.speaker !== undefined && r.speaker !== null && typeof r.speaker !== "string") {
      return `speaker must be text; got ${typeof r.speaker}.`;
    }
    if (r.createdAt !== undefined && r.createdAt !== null) createdAt = toEpochMs(r.createdAt, "createdAt");
  } catch (error) {
    return (error as Error).message.replace(/^record: /, "");
  }
  const item: NewItem = {
    kind: parsed.kind,
    content: parsed.content,
    sessionId: parsed.sessionId,
    userId: parsed.userId,
    speaker: typeof r.speaker === "string" && r.speaker !== "" ? r.speaker : undefined,
    tags: parsed.tags,
    metadata: parsed.metadata,
    digest: typeof r.digest === "string" && /^[0-9a-f]{16,128}$/.test(r.digest) ? r.digest : undefined,
    createdAt,
    expiresAt: parsed.expiresAt ?? undefined,
  };
  // Records without a digest get the one the store would give them, so re-imports skip them. A
  // turn without a creation time is stored as of now, but its digest comes from what the record
  // says and how often the file said it before: a time generated per import would make every
  // re-import a new turn.
  if (item.digest === undefined && item.kind === "turn" && item.createdAt === undefined) {
    const said = undatedTurnDigest(item, 0);
    const occurrence = undated.get(said) ?? 0;
    undated.set(said, occurrence + 1);
    item.digest = occurrence === 0 ? said : undatedTurnDigest(item, occurrence);
  }
  item.digest ??= itemDigest(item, item.kind === "turn" ? item.createdAt! : 0);
  return item;
}

/** What `migrate` did. */
export interface MigrateResult {
  path: string;
  /** Schema version found (0: no database yet). */
  fromVersion: number;
  toVersion: number;
  migrated: boolean;
  items: number;
  ms: number;
}

/**
 * `migrate`: bring the database to this package's schema now, with the host's progress bar (unless
 * `--json`), instead of on the agent's first open. Every item is kept; a database that is already
 * current is left alone, and one without a file is not created.
 */
export async function migrateCommand(ctx: CommandContext, options: JsonOption = {}): Promise<MigrateResult> {
  const { config } = await loadSqliteConfig(ctx.providerOptions ?? {}, ctx.hermesHome, ctx.providerName ?? "sqlite");
  const file = config.path;
  const started = performance.now();
  const fromVersion = readSchemaVersion(file);
  const result: MigrateResult = { path: file, fromVersion, toVersion: fromVersion, migrated: false, items: 0, ms: 0 };
  if (fromVersion === 0) {
    emit(ctx, options, result, () => `No SQLite memory database at ${file}: nothing to migrate.`);
    return result;
  }
  const bar = options.json ? undefined : io(ctx).progress?.("Migrating");
  let db: ReturnType<typeof openDatabase>;
  try {
    db = openDatabase(file, { onMigrationProgress: (done, total) => bar?.update(done, total) });
  } finally {
    // Also when the migration fails: the host erases the bar and shows the cursor again.
    bar?.stop();
  }
  try {
    result.toVersion = Number(db.pragma("user_version", { simple: true }));
    result.migrated = result.toVersion !== fromVersion;
    result.items = Number(db.prepare(`SELECT COUNT(*) FROM items`).pluck().get());
  } finally {
    closeDatabase(db);
  }
  result.ms = Math.round(performance.now() - started);
  emit(ctx, options, result, () =>
    result.migrated
      ? `Migrated ${file} from schema v${fromVersion} to v${result.toVersion}: ${result.items} item(s) kept, ${(result.ms / 1000).toFixed(1)} s.`
      : `${file} is already at schema v${SCHEMA_VERSION} (${result.items} item(s)); nothing to do.`,
  );
  return result;
}

/** `vacuum`: rebuild and optimise the FTS index, VACUUM, truncate the WAL. */
export async function vacuumCommand(ctx: CommandContext, options: JsonOption = {}): Promise<{ beforeBytes: number; afterBytes: number }> {
  const result = await withProvider(ctx, (p) => p.memoryStore!.vacuum());
  emit(ctx, options, result, () => `Vacuumed: ${formatBytes(result.beforeBytes)} → ${formatBytes(result.afterBytes)}.`);
  return result;
}

/** `doctor`: integrity_check and FTS consistency. `ok: false` makes the CLI exit 1. */
export async function doctorCommand(ctx: CommandContext, options: JsonOption = {}): Promise<DoctorReport & { location: string }> {
  const report = await withProvider(ctx, (p) => ({ ...p.memoryStore!.doctor(), location: p.memoryStore!.file }));
  emit(ctx, options, report, () =>
    [
      `database:     ${report.location}`,
      `schema:       v${report.schemaVersion}, journal ${report.journalMode}`,
      `integrity:    ${report.integrity}`,
      `fts index:    ${report.ftsConsistent ? "consistent" : "OUT OF SYNC"}`,
      `items:        ${report.items}`,
      report.ok ? "OK" : `PROBLEMS:\n${report.problems.map((p) => `  - ${p}`).join("\n")}`,
    ].join("\n"),
  );
  return report;
}

function formatBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}
