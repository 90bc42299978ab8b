import fs from "node:fs";
import fsp from "node:fs/promises";
import path from "node:path";
import {
  MemoryProvider,
  allowsAutomaticWrites,
  defaultEnvVarName,
  getEnv,
  loadProviderConfig,
  type ConfigField,
  type InitContext,
  type MemoryHit,
  type MemoryItem,
  type MemoryKind,
  type MemorySearchOptions,
  type MemoryStats,
  type PrefetchOptions,
  type SearchableMemory,
  type SyncTurnOptions,
  type ToolSchema,
  type MemoryProviderRegistrationContext,
} from "@hermes/memory-core";
import {
  formatRecall,
  MEMORY_TOOL_LIMITS,
  memoryToolSchemas,
  parseMemoryItem,
  parseSearchLimit,
  PREFETCH_CONFIG_FIELDS,
  queryTokens,
  ToolRouter,
  ToolUserScope,
  turnItem,
  type ToolItemScope,
} from "@hermes/memory-provider-kit";

interface StoredNote {
  id: string;
  content: string;
  kind: MemoryKind;
  sessionId?: string;
  userId?: string;
  createdAt: string;
  tags: string[];
  metadata: Record<string, unknown>;
}

/**
 * Where `hermes-memory memory setup {{providerName}}` stores the API key: `$HERMES_HOME/.env`
 * (mode 0600), never config.yaml. Read it with `getEnv(API_KEY_ENV)`.
 */
export const API_KEY_ENV = defaultEnvVarName("{{providerName}}", "api_key");

/**
 * Every setting, declared once. `hermes-memory memory setup {{providerName}}` asks these fields
 * (secrets go to `$HERMES_HOME/.env` under `envVar`, the rest to config.yaml `memory.{{providerName}}`),
 * and `loadProviderConfig` turns the same list into the typed runtime config — options, then
 * config.yaml, then env, then `default` — validated the same way (`type`, `minimum`/`maximum`,
 * `choices`). Mark a tunable `advanced: true` to resolve it without asking it in setup.
 * `PREFETCH_CONFIG_FIELDS` are the recall settings every provider names alike: `prefetch_limit`
 * (notes recalled before each turn, default 5) and `prefetch_max_chars` (size of that block, 2000).
 */
export const CONFIG_FIELDS = [
  ...PREFETCH_CONFIG_FIELDS,
  { key: "api_key", description: "API key of a remote service (optional: notes stay local without it)", secret: true, envVar: API_KEY_ENV },
] as const satisfies readonly ConfigField[];

/**
 * The model's tools, built by the kit like every provider's: `{{toolPrefix}}_notes_search` (`query`,
 * `limit`, one `kind`, `sessionId`), `{{toolPrefix}}_notes_remember` (`content`, `tags`) and
 * `{{toolPrefix}}_notes_forget` (`id`). The handlers below honour every argument the schemas offer.
 */
const TOOL_PREFIX = "{{toolPrefix}}_notes_";
const TOOL_SCHEMAS: ToolSchema[] = memoryToolSchemas({ prefix: TOOL_PREFIX, actions: ["search", "remember", "forget"], store: "notes" });

// Validates arguments against TOOL_SCHEMAS and answers every failure as {"error": ...}, never a throw.
const tools = new ToolRouter({ owner: "{{providerName}} memory", schemas: TOOL_SCHEMAS });

/**
 * {{description}}
 *
 * Stores notes and conversation turns as JSON lines in `$HERMES_HOME/{{providerName}}/notes.jsonl`.
 * Writes are queued and appended in the background, so `syncTurn` never blocks the agent.
 */
export class {{className}} extends MemoryProvider implements SearchableMemory {
  readonly name = "{{providerName}}";
  private file: string | null = null;
  private notes: StoredNote[] = [];
  private queue: StoredNote[] = [];
  private writing: Promise<void> = Promise.resolve();
  private automaticWrites = true;
  private userId: string | undefined;
  private counter = 0;
  private apiKey = "";
  private prefetchLimit = 5;
  private prefetchMaxChars = 2000;

  isAvailable(): boolean {
    // Synchronous, no network: check configuration only. getEnv() returns the active profile's
    // $HERMES_HOME/.env value (what `memory setup` saved), else the process environment. This
    // provider works without a key (notes stay local); one that needs its key returns
    // `Boolean(getEnv(API_KEY_ENV))` here and marks the schema field `required: true`.
    return true;
  }

  async initialize(_sessionId: string, ctx: InitContext): Promise<void> {
    // Typed as { prefetchLimit: number; prefetchMaxChars: number; apiKey?: string }; a bad value
    // throws INVALID_CONFIG naming the key, the value and where it came from. Secrets are read from
    // the environment (the profile's .env first) and never copied into process.env.
    const { config } = await loadProviderConfig(CONFIG_FIELDS, { provider: this.name, hermesHome: ctx.hermesHome });
    this.apiKey = config.apiKey ?? "";
    this.prefetchLimit = config.prefetchLimit;
    this.prefetchMaxChars = config.prefetchMaxChars;
    const dir = path.join(ctx.hermesHome, "{{providerName}}");
    fs.mkdirSync(dir, { recursive: true });
    this.file = path.join(dir, "notes.jsonl");
    this.automaticWrites = allowsAutomaticWrites(ctx);
    this.userId = ctx.userId;
    this.notes = fs.existsSync(this.file)
      ? fs.readFileSync(this.file, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line) as StoredNote)
      : [];
  }

  getToolSchemas(): ToolSchema[] {
    return TOOL_SCHEMAS.map((s) => ({ ...s }));
  }

  async handleToolCall(toolName: string, args: Record<string, unknown>): Promise<string> {
    // The model speaks for the session's user (ctx.userId): the tools reach that user's notes
    // only, and save under that user. A tool that takes an id looks it up with scope.item(id)
    // (id and user in one condition), so another user's id is answered like an unknown one.
    // The router has checked the arguments against the schemas: a `limit` is within its bounds or
    // absent (then the default the schema states), `kind` is one kind, `tags` a list of text.
    const scope = new ToolUserScope(this.userId);
    return tools.run(toolName, args, {
      [`${TOOL_PREFIX}search`]: (a) => {
        const limit = (a.limit as number | undefined) ?? MEMORY_TOOL_LIMITS.search.default;
        const conditions = { limit, ...(a.kind ? { kind: a.kind as MemoryKind } : {}), ...(a.sessionId ? { sessionId: String(a.sessionId) } : {}) };
        const results = this.search(String(a.query), scope.within(conditions)).map((h) => ({ id: h.id, kind: h.kind, content: h.content, tags: h.tags, sessionId: h.sessionId, createdAt: h.createdAt }));
        return { results, count: results.length };
      },
      [`${TOOL_PREFIX}remember`]: (a) => {
        const tags = (a.tags as string[] | undefined) ?? [];
        return { ok: true, id: this.remember({ content: String(a.content), kind: "fact", tags, ...(scope.userId ? { userId: scope.userId } : {}) }) };
      },
      [`${TOOL_PREFIX}forget`]: (a) => {
        const id = String(a.id);
        return this.forgetIn(scope.item(id)) ? { ok: true, id } : { error: `no note with id ${id}` };
      },
    });
  }

  getConfigSchema(): ConfigField[] {
    return CONFIG_FIELDS.map((field) => ({ ...field }));
  }

  /**
   * Runs after `hermes-memory memory setup {{providerName}}` saved the answers: the place for an
   * OAuth sign-in, a connection test or a first sync. A throw is reported to the user.
   */
  override postSetup(hermesHome: string): void {
    fs.mkdirSync(path.join(hermesHome, "{{providerName}}"), { recursive: true });
  }

  /** Extra lines for `hermes-memory memory status` (never secrets; no network). */
  override getStatusConfig(): Record<string, unknown> {
    return { notes: this.file ?? "(not opened)", remote: getEnv(API_KEY_ENV) ? `key set (${API_KEY_ENV})` : "local only" };
  }

  systemPromptBlock(): string {
    return `## {{providerName}} memory\nUse ${TOOL_PREFIX}remember to save durable notes, ${TOOL_PREFIX}search to find them and ${TOOL_PREFIX}forget to delete one.`;
  }

  prefetch(query: string, _options: PrefetchOptions): string {
    // Recall, too, shows the session's user only their own notes.
    const hits = this.search(query, { limit: this.prefetchLimit, ...(this.userId ? { userId: this.userId } : {}) });
    return formatRecall(hits, { header: "## Recalled notes", maxChars: this.prefetchMaxChars });
  }

  syncTurn(userContent: string, assistantContent: string, options: SyncTurnOptions): void {
    if (!this.automaticWrites) return;
    // The item every provider stores for a turn: "<turnAuthor.name or User>: …" and "Assistant: …"
    // lines, the turn's session, the session's user (else the turn's author), the author in metadata.
    const turn = turnItem(userContent, assistantContent, options, { userId: this.userId });
    if (turn) this.remember(turn);
  }

  remember(item: MemoryItem): string {
    if (!this.file) throw new Error("{{providerName}}: initialize() must be called first");
    // Refuse (INVALID_ARGUMENT) an item that could not be stored before it is queued, so a malformed
    // one never holds up the writes queued with it.
    const { content, kind, sessionId, userId, tags, metadata } = parseMemoryItem(item);
    const note: StoredNote = {
      id: `${Date.now().toString(36)}-${(this.counter++).toString(36)}`,
      content,
      kind,
      sessionId,
      userId: userId ?? this.userId,
      createdAt: new Date().toISOString(),
      tags,
      metadata,
    };
    this.notes.push(note);
    this.queue.push(note);
    this.scheduleWrite();
    return note.id;
  }

  search(query: string, options: MemorySearchOptions = {}): MemoryHit[] {
    // Absent: 10 hits; 0, negative numbers, NaN and text are refused (INVALID_ARGUMENT).
    const limit = parseSearchLimit(options.limit);
    // Search words: lower-case, stopwords and FTS syntax dropped (the kit's tokenizer).
    const wanted = new Set(queryTokens(query));
    if (wanted.size === 0) return [];
    return this.notes
      .filter((n) => (!options.kind || n.kind === options.kind) && (!options.sessionId || n.sessionId === options.sessionId) && (!options.userId || n.userId === options.userId))
      .map((n) => ({ n, score: queryTokens(n.content).filter((t) => wanted.has(t)).length }))
      .filter((x) => x.score > 0)
      .sort((a, b) => b.score - a.score)
      .slice(0, limit)
      .map(({ n, score }) => ({ ...n, score }));
  }

  get(id: string): MemoryHit | null {
    const note = this.notes.find((n) => n.id === id);
    return note ? { ...note, score: 0 } : null;
  }

  forget(id: string): boolean {
    return this.forgetIn({ ids: [id] });
  }

  stats(): MemoryStats {
    const byKind: Record<MemoryKind, number> = { turn: 0, fact: 0, checkpoint: 0 };
    for (const n of this.notes) byKind[n.kind] += 1;
    return { items: this.notes.length, byKind, location: this.file ?? undefined };
  }

  async flush(): Promise<void> {
    this.scheduleWrite();
    await this.writing;
  }

  // The session boundary is a flush point: the host may exit right after it without shutdown().
  async onSessionEnd(): Promise<void> {
    await this.flush();
  }

  async shutdown(): Promise<void> {
    await this.flush();
  }

  /**
   * Delete the notes in `scope`: its ids, and its user when it names one, as one condition, so a
   * tool given another user's id finds nothing, exactly as for an id nobody ever used.
   */
  private forgetIn(scope: ToolItemScope): boolean {
    const doomed = (n: StoredNote): boolean => scope.ids.includes(n.id) && (scope.userId === undefined || n.userId === scope.userId);
    const before = this.notes.length;
    this.notes = this.notes.filter((n) => !doomed(n));
    if (this.notes.length === before) return false;
    this.rewrite();
    return true;
  }

  private scheduleWrite(): void {
    // Chain appends so concurrent writes land in order and never interleave.
    this.writing = this.writing.then(async () => {
      if (!this.file || this.queue.length === 0) return;
      const batch = this.queue.splice(0);
      await fsp.appendFile(this.file, batch.map((n) => JSON.stringify(n)).join("\n") + "\n");
    });
  }

  private rewrite(): void {
    this.writing = this.writing.then(async () => {
      if (!this.file) return;
      this.queue = [];
      await fsp.writeFile(this.file, this.notes.map((n) => JSON.stringify(n)).join("\n") + (this.notes.length ? "\n" : ""));
    });
  }
}

/** Entry point called by the host's loader. */
export function register(ctx: Pick<MemoryProviderRegistrationContext, "registerMemoryProvider">): void {
  ctx.registerMemoryProvider(new {{className}}());
}

export default {{className}};
