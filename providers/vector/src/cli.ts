import type { Command } from "commander";
import type { ProviderCliContext, ProviderCliIo } from "@hermes/memory-core";
import { checkJsonlSource, checkJsonlTarget, countJsonlRecords, readJsonlFile, writeJsonlFile } from "@hermes/memory-provider-kit";
import { HermesMemoryError, describeError, errorDocument, type ForgetScope, type MemoryKind } from "@hermes/memory-core";
import fs from "node:fs";
import path from "node:path";
import { Outbox } from "./pinecone/outbox.js";
import {
  OUTBOX_FILE,
  REMOTE_OUTBOX_FILE,
  VECTOR_DIR,
  VectorMemoryProvider,
  type ExportedItem,
  type ProgressCallback,
  type VectorMemoryProviderOptions,
} from "./vector-memory-provider.js";

/** Where CLI actions write, and the host's prompts and progress bars. Injectable for tests. */
export type CliIo = ProviderCliIo;

/** The context the host CLI passes to `registerCli`. */
export interface VectorCliContext {
  hermesHome: string;
  providerName: string;
  /** Provider options for tests/hosts (e.g. an injected embedder). */
  providerOptions?: VectorMemoryProviderOptions;
}

/** Options shared by every subcommand. */
export interface CommonCliOptions {
  json?: boolean;
  profile?: string;
  user?: string;
}

const processIo: CliIo = {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  isTTY: Boolean(process.stderr.isTTY),
};

async function withProvider<T>(
  ctx: VectorCliContext,
  options: CommonCliOptions & { allowReset?: boolean; writes?: boolean; sidecarLayout?: boolean; io?: CliIo },
  fn: (p: VectorMemoryProvider) => Promise<T>,
): Promise<T> {
  const provider = new VectorMemoryProvider(ctx.providerOptions);
  await provider.openForMaintenance(ctx.hermesHome, {
    ...(options.profile ? { profile: options.profile } : {}),
    ...(options.user ? { user: options.user } : {}),
    allowReset: options.allowReset === true,
    sidecarLayout: options.sidecarLayout === true,
  });
  let result: T;
  try {
    result = await fn(provider);
  } catch (error) {
    await provider.shutdown().catch(() => undefined);
    throw error;
  }
  // Writes that earlier runs left undelivered (outbox) do not fail a command that succeeded; a
  // command that wrote (reindex, import) fails when its own writes are not stored.
  await provider.shutdown().catch((error: unknown) => {
    if (options.writes) throw error;
    (options.io ?? processIo).stderr(`vector: warning: ${describeError(error)}\n`);
  });
  return result;
}

/** The host's progress bar (`io.progress`; none under `--json` or from a host without bars). */
function progress(io: CliIo, options: CommonCliOptions, label: string): { update: ProgressCallback; stop(): void } {
  const bar = options.json ? undefined : io.progress?.(label);
  return { update: (done, total) => bar?.update(done, total), stop: () => bar?.stop() };
}

/**
 * Exit codes of the vector subcommands (the host CLI's): 0 done; 1 a typed failure with a remedy
 * on stderr (`STORAGE_FAILED`: Pinecone unreachable after retries, disk full, read-only home;
 * `PROVIDER_UNAVAILABLE`, `EMBEDDING_DIMENSION_MISMATCH`, `ITEM_NOT_FOUND`, …); 2 an unexpected
 * error. Under `--json` the failure is core's `errorDocument` on stdout, as for the host's commands.
 */
function fail(io: CliIo, options: CommonCliOptions, error: unknown): number {
  if (options.json) io.stdout(`${JSON.stringify(errorDocument(error))}\n`);
  else io.stderr(`vector: ${describeError(error)}\n`);
  return HermesMemoryError.isInstance(error) ? 1 : 2;
}

/** `stats`: item counts, store, embedder, location. Returns the exit code. */
export async function runStats(ctx: VectorCliContext, options: CommonCliOptions = {}, io: CliIo = processIo): Promise<number> {
  try {
    const stats = await withProvider(ctx, { ...options, io }, (p) => p.stats());
    if (options.json) io.stdout(`${JSON.stringify(stats)}\n`);
    else {
      io.stdout(
        [
          `Vector memory (${String(stats.store)} store, ${String(stats.embedder)}, ${String(stats.dimensions)} dims, hybrid ${stats.hybrid ? "on" : "off"})`,
          `  items:      ${stats.items} (turns ${stats.byKind.turn}, facts ${stats.byKind.fact}, checkpoints ${stats.byKind.checkpoint})`,
          `  sessions:   ${stats.sessions ?? 0}`,
          `  namespaces: ${
            Object.entries(stats.namespaces as Record<string, number>)
              .map(([n, c]) => `${n || "(default)"}=${c}`)
              .join(", ") || "none"
          }`,
          `  location:   ${stats.location ?? ""}`,
          "",
        ].join("\n"),
      );
    }
    return 0;
  } catch (error) {
    return fail(io, options, error);
  }
}

/** `search <query>`: hybrid search, best first. */
export async function runSearch(
  ctx: VectorCliContext,
  query: string,
  options: CommonCliOptions & { limit?: number; kind?: MemoryKind; session?: string } = {},
  io: CliIo = processIo,
): Promise<number> {
  try {
    const hits = await withProvider(ctx, { ...options, io }, (p) =>
      p.search(query, {
        limit: options.limit ?? 10,
        ...(options.kind ? { kind: options.kind } : {}),
        ...(options.session ? { sessionId: options.session } : {}),
      }),
    );
    if (options.json) io.stdout(`${JSON.stringify(hits)}\n`);
    else if (hits.length === 0) io.stdout("No matches.\n");
    else {
      for (const h of hits) io.stdout(`${h.score.toFixed(4)}  ${h.id}  [${h.kind}]  ${h.content.replace(/\s+/g, " ").slice(0, 160)}\n`);
    }
    return 0;
  } catch (error) {
    return fail(io, options, error);
  }
}

/** Options of `reindex`. */
export interface ReindexCliOptions extends CommonCliOptions {
  /** `remote`: move the sidecar layout's items into the remote Pinecone layout (the sidecar is kept). */
  to?: string;
}

/**
 * `reindex`: re-embed everything into the configured store (the host's progress bar). With
 * `--to remote`: move the sidecar layout's items into the remote Pinecone layout, in the namespace
 * `memory.vector.pinecone_namespace` or `--profile`; safe to re-run, the sidecar is kept.
 */
export async function runReindex(ctx: VectorCliContext, options: ReindexCliOptions = {}, io: CliIo = processIo): Promise<number> {
  const bar = progress(io, options, options.to === "remote" ? "Moving to the remote layout" : "Reindexing");
  try {
    if (options.to !== undefined && options.to !== "remote") {
      throw new HermesMemoryError({
        code: "INVALID_ARGUMENT",
        message: `--to accepts only "remote" (move the sidecar layout into Pinecone); got ${JSON.stringify(options.to.slice(0, 40))}.`,
      });
    }
    if (options.to === "remote") {
      const moved = await withProvider(ctx, { ...options, writes: true, sidecarLayout: true, io }, (p) =>
        p.migrateToRemote(p.resolvedConfig.pineconeNamespace || options.profile || "", bar.update),
      );
      bar.stop();
      if (options.json) io.stdout(`${JSON.stringify({ ...moved, layout: "remote" })}\n`);
      else {
        io.stdout(
          `Moved ${moved.items} items into the remote Pinecone layout (namespace ${moved.namespace}). The local sidecar is kept; set memory.vector.pinecone_layout: remote (and pinecone_namespace: ${moved.namespace}) on every machine to use it.\n`,
        );
      }
      return 0;
    }
    const result = await withProvider(ctx, { ...options, allowReset: true, writes: true, io }, async (p) => ({
      ...(await p.reindex(bar.update)),
      store: p.resolvedConfig.store,
    }));
    bar.stop();
    if (options.json) io.stdout(`${JSON.stringify(result)}\n`);
    else {
      io.stdout(`Reindexed ${result.items} items in ${result.namespaces} namespaces into the ${result.store} store.\n`);
      if (result.unembedded > 0) {
        io.stdout(
          `${result.unembedded} items were refused for their text and stay without a vector: keyword search finds them. Run reindex again once the embedder accepts them.\n`,
        );
      }
    }
    return 0;
  } catch (error) {
    bar.stop();
    return fail(io, options, error);
  }
}

/** `export [file]`: every item as JSON Lines (to the file, or stdout). */
export async function runExport(
  ctx: VectorCliContext,
  file: string | undefined,
  options: CommonCliOptions = {},
  io: CliIo = processIo,
): Promise<number> {
  try {
    // Refused before the provider opens: a directory, device, pipe or missing folder.
    if (file) checkJsonlTarget(file);
    const count = await withProvider(ctx, { ...options, io }, async (p) => {
      if (file) return writeJsonlFile(file, p.exportItems());
      let n = 0;
      for (const item of p.exportItems()) {
        io.stdout(`${JSON.stringify(item)}\n`);
        n++;
      }
      return n;
    });
    if (file) {
      if (options.json) io.stdout(`${JSON.stringify({ exported: count, file })}\n`);
      else io.stdout(`Exported ${count} items to ${file}.\n`);
    }
    return 0;
  } catch (error) {
    return fail(io, options, error);
  }
}

async function* readJsonLines(file: string): AsyncGenerator<ExportedItem> {
  for await (const line of readJsonlFile(file, "hermes-memory vector export")) {
    if ("error" in line) {
      throw new HermesMemoryError({
        code: "INVALID_ARGUMENT",
        message: `${file}:${line.lineNo} is not valid JSON. Import files are written by \`hermes-memory vector export\`.`,
      });
    }
    yield line.value as ExportedItem;
  }
}

/** `import <file>`: load an export (re-embedded with the configured embedder; the host's progress bar). */
export async function runImport(
  ctx: VectorCliContext,
  file: string,
  options: CommonCliOptions = {},
  io: CliIo = processIo,
): Promise<number> {
  const bar = progress(io, options, "Importing");
  try {
    // A pipe can be read once: counting its lines first would leave nothing to import.
    const { regular } = checkJsonlSource(file, "hermes-memory vector export");
    let total = 0;
    try {
      if (regular) total = countJsonlRecords(file);
    } catch (error) {
      throw new HermesMemoryError({
        code: "INVALID_ARGUMENT",
        message: `Cannot read ${file} (${describeError(error)}). Pass a JSON Lines file written by \`hermes-memory vector export\`.`,
        cause: error,
      });
    }
    const count = await withProvider(ctx, { ...options, writes: true, io }, (p) => p.importItems(readJsonLines(file), bar.update, total));
    bar.stop();
    if (options.json) io.stdout(`${JSON.stringify({ imported: count })}\n`);
    else io.stdout(`Imported ${count} items.\n`);
    return 0;
  } catch (error) {
    bar.stop();
    return fail(io, options, error);
  }
}

/** Options of `forget`: the erasure scope besides an id, and how to confirm it. */
export interface ForgetCliOptions extends CommonCliOptions {
  session?: string;
  kind?: MemoryKind;
  /** Items with any of these tags. */
  tag?: string[];
  /** A `MemoryFilter` as JSON (tags, createdAt, metadata…); the other options are added to it. */
  filter?: string;
  /** Erase without asking. */
  yes?: boolean;
  /** Erase also when the scope matches every item; alone, erase every item (`confirmAll`). */
  all?: boolean;
}

/**
 * `forget [id]`: erase one item by id, or every item in a scope (`--user`, `--session`, `--kind`,
 * `--tag`, `--filter <json>`) from every copy. A scope wider than one id is counted first and
 * erased only after `io.confirm` says yes, or with `--yes` (without a prompt it is refused). A
 * scope without an id that matches every item is refused unless `--all` is given (`--all` alone
 * erases every item).
 */
export async function runForget(
  ctx: VectorCliContext,
  id: string | undefined,
  options: ForgetCliOptions = {},
  io: CliIo = processIo,
): Promise<number> {
  try {
    let scope: ForgetScope = {};
    if (options.filter !== undefined) {
      let parsed: unknown;
      try {
        parsed = JSON.parse(options.filter);
      } catch {
        throw new HermesMemoryError({
          code: "INVALID_ARGUMENT",
          message: `--filter must be a JSON object such as '{"tags": {"any": ["draft"]}}'; got ${options.filter.slice(0, 60)}.`,
        });
      }
      if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
        throw new HermesMemoryError({
          code: "INVALID_ARGUMENT",
          message: "--filter must be a JSON object of filter conditions (kind, sessionId, userId, tags, createdAt, metadata).",
        });
      }
      scope = parsed as ForgetScope;
    }
    scope = {
      ...scope,
      ...(id ? { ids: [id] } : {}),
      ...(options.user ? { userId: options.user } : {}),
      ...(options.session ? { sessionId: options.session } : {}),
      ...(options.kind ? { kind: options.kind } : {}),
      ...(options.tag && options.tag.length > 0 ? { tags: { any: options.tag } } : {}),
      ...(options.all ? { confirmAll: true } : {}),
    };
    if (Object.keys(scope).length === 0) {
      throw new HermesMemoryError({
        code: "INVALID_ARGUMENT",
        message: "forget needs an id or a scope: --user, --session, --kind, --tag, --filter <json>, or --all for every item.",
      });
    }
    const oneId = id !== undefined && Object.keys(scope).length === 1;
    const result = await withProvider(ctx, { ...options, writes: true, io }, async (p) => {
      if (!oneId) {
        const count = await p.countWhere(scope);
        if (count === 0) return { erased: 0 };
        // The provider refuses it too (when it erases); this says it in the CLI's words.
        if (!options.all && scope.ids === undefined && count >= (await p.countWhere({ confirmAll: true }))) {
          throw new HermesMemoryError({
            code: "INVALID_ARGUMENT",
            message: `forget: the scope matches all ${count} items of vector memory; nothing was erased. Add --all to erase every item, or narrow the scope.`,
          });
        }
        if (!options.yes) {
          if (!io.confirm) {
            throw new HermesMemoryError({
              code: "INVALID_ARGUMENT",
              message: `This would erase ${count} items and cannot be asked here; pass --yes to erase them.`,
            });
          }
          if (!(await io.confirm(`Erase ${count} items from vector memory (every copy, no undo)?`))) return { erased: 0, cancelled: true };
        }
      }
      return { erased: await p.forgetWhere(scope) };
    });
    if (oneId && result.erased === 0) {
      throw new HermesMemoryError({
        code: "ITEM_NOT_FOUND",
        message: `No item with id ${id}; nothing was erased. \`hermes-memory vector search <words>\` shows stored items and their ids.`,
      });
    }
    if (options.json) io.stdout(`${JSON.stringify(result)}\n`);
    else if ("cancelled" in result) io.stdout("Cancelled; nothing was erased.\n");
    else io.stdout(result.erased === 0 ? "No matching items.\n" : `Erased ${result.erased} items.\n`);
    return 0;
  } catch (error) {
    return fail(io, options, error);
  }
}

/** `purge`: delete the items that have expired, from every copy. */
export async function runPurge(ctx: VectorCliContext, options: CommonCliOptions = {}, io: CliIo = processIo): Promise<number> {
  try {
    const purged = await withProvider(ctx, { ...options, writes: true, io }, (p) => p.purgeExpired());
    if (options.json) io.stdout(`${JSON.stringify({ purged })}\n`);
    else io.stdout(`Purged ${purged} expired items.\n`);
    return 0;
  } catch (error) {
    return fail(io, options, error);
  }
}

/** Options of `refused`. */
export interface RefusedCliOptions extends CommonCliOptions {
  /** Queue the set-aside writes again (sent at the next start or flush). */
  retry?: boolean;
  /** Delete the set-aside writes for good. */
  drop?: boolean;
}

/**
 * `refused`: list the writes set aside because Pinecone or the embeddings endpoint refused their
 * content (HTTP 400/413/422), from both outboxes of the home; `--retry` queues them again (after
 * the cause is fixed), `--drop` deletes them. Reads only the outbox files: no network call.
 */
export async function runRefused(ctx: VectorCliContext, options: RefusedCliOptions = {}, io: CliIo = processIo): Promise<number> {
  try {
    if (options.retry && options.drop)
      throw new HermesMemoryError({ code: "INVALID_ARGUMENT", message: "Pass either --retry or --drop, not both." });
    const refused: Array<{ id: string; namespace: string; reason: string; refusedAt: string; outbox: string }> = [];
    let changed = 0;
    for (const name of [OUTBOX_FILE, REMOTE_OUTBOX_FILE]) {
      const file = path.join(ctx.hermesHome, VECTOR_DIR, name);
      // A missing outbox has nothing set aside (and is not created here).
      if (!fs.existsSync(file)) continue;
      const outbox = Outbox.open(file);
      try {
        for (const entry of outbox.refused()) {
          refused.push({
            id: entry.id,
            namespace: entry.namespace,
            reason: entry.reason,
            refusedAt: new Date(entry.refusedAt).toISOString(),
            outbox: file,
          });
        }
        if (options.retry) changed += outbox.retryRefused();
        if (options.drop) changed += outbox.dropRefused();
      } finally {
        outbox.close();
      }
    }
    if (options.json) {
      io.stdout(
        `${JSON.stringify({ refused, ...(options.retry ? { retried: changed } : {}), ...(options.drop ? { dropped: changed } : {}) })}\n`,
      );
      return 0;
    }
    if (refused.length === 0) {
      io.stdout("No writes are set aside.\n");
      return 0;
    }
    for (const r of refused)
      io.stdout(`${r.refusedAt}  ${r.namespace || "(default)"}  ${r.id}  ${r.reason.replace(/\s+/g, " ").slice(0, 240)}\n`);
    if (options.retry)
      io.stdout(
        `Queued ${changed} writes again; they are sent at the next start or flush (a write of the same id made since keeps the newer version).\n`,
      );
    else if (options.drop) io.stdout(`Deleted ${changed} set-aside writes.\n`);
    else
      io.stdout(
        `${refused.length} writes are set aside. After fixing the cause, queue them again with --retry, or delete them with --drop.\n`,
      );
    return 0;
  } catch (error) {
    return fail(io, options, error);
  }
}

function common(cmd: Command): Command {
  return cmd
    .option("--json", "machine-readable output")
    .option("--profile <name>", "profile part of the namespace (default: default)")
    .option("--user <id>", "user part of the namespace (default: local)");
}

/**
 * Add `stats | search | reindex | export | import | forget | purge | refused` under the host's `vector` command. Each action
 * sets `process.exitCode` (never calls `process.exit`).
 */
export function registerCli(command: Command, context: ProviderCliContext): void {
  const ctx: VectorCliContext = { hermesHome: context.hermesHome, providerName: context.providerName };
  // The host's streams for every subcommand (an embedding host such as `runCli(args, io)` gets the output).
  const io = context.io ?? processIo;
  const done = (code: number): void => {
    if (code !== 0) process.exitCode = code;
  };
  common(command.command("stats").description("Show item counts, store, embedder and location")).action(async (opts: CommonCliOptions) =>
    done(await runStats(ctx, opts, io)),
  );
  common(command.command("search").description("Search vector memory").argument("<query...>", "what to look for"))
    .option("--limit <n>", "maximum results", (v) => (v.trim() !== "" && Number.isFinite(Number(v)) ? Number(v) : v), 10)
    .option("--kind <kind>", "turn | fact | checkpoint")
    .option("--session <id>", "only this session")
    .action(async (query: string[], opts: CommonCliOptions & { limit?: number; kind?: MemoryKind; session?: string }) =>
      done(await runSearch(ctx, query.join(" "), opts, io)),
    );
  common(
    command.command("reindex").description("Re-embed every item into the configured store (after changing embedder, dimensions or store)"),
  )
    .option("--to <layout>", "remote: move the sidecar layout's items into the remote Pinecone layout (the sidecar is kept)")
    .action(async (opts: ReindexCliOptions) => done(await runReindex(ctx, opts, io)));
  common(
    command.command("export").description("Write every item as JSON Lines").argument("[file]", "output file (default: stdout)"),
  ).action(async (file: string | undefined, opts: CommonCliOptions) => done(await runExport(ctx, file, opts, io)));
  common(command.command("import").description("Import a JSON Lines export").argument("<file>", "file written by export")).action(
    async (file: string, opts: CommonCliOptions) => done(await runImport(ctx, file, opts, io)),
  );
  common(
    command.command("forget").description("Erase an item by id, or every item in a scope, from every copy").argument("[id]", "item id"),
  )
    .option("--session <id>", "items of this session")
    .option("--kind <kind>", "items of this kind: turn | fact | checkpoint")
    .option("--tag <tag>", "items with this tag (repeat for any of several)", (v: string, prev: string[] = []) => [...prev, v])
    .option("--filter <json>", 'a filter as JSON, e.g. \'{"metadata": {"project": "apollo"}}\'')
    .option("--all", "erase also when the scope matches every item (alone: every item)")
    .option("--yes", "erase without asking")
    .action(async (id: string | undefined, opts: ForgetCliOptions) => done(await runForget(ctx, id, opts, io)));
  common(command.command("purge").description("Delete the items that have expired")).action(async (opts: CommonCliOptions) =>
    done(await runPurge(ctx, opts, io)),
  );
  common(command.command("refused").description("List the writes set aside because Pinecone or the embedder refused their content"))
    .option("--retry", "queue them again (sent at the next start or flush)")
    .option("--drop", "delete them for good")
    .action(async (opts: RefusedCliOptions) => done(await runRefused(ctx, opts, io)));
}
