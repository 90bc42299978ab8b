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
import { formatRecall, parseMemoryItem, parseSearchLimit, queryTokens, ToolRouter, ToolUserScope, turnText } from "@hermes/memory-provider-kit";

interface StoredNote {
  id: string;
  content: string;
  kind: MemoryKind;
  sessionId?: string;
  userId?: string;
  createdAt: string;
  metadata: Record<string, unknown>;
}

const TOOL_NAME = "{{toolPrefix}}_notes";
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
 */
export const CONFIG_FIELDS = [
  { key: "recall_limit", description: "Notes recalled before each turn", type: "integer", default: 3, minimum: 1, maximum: 20 },
  { key: "api_key", description: "API key of a remote service (optional: notes stay local without it)", secret: true, envVar: API_KEY_ENV },
] as const satisfies readonly ConfigField[];

const TOOL_SCHEMAS: ToolSchema[] = [
  {
    name: TOOL_NAME,
    description: "Save a note for later sessions (action 'add') or search saved notes (action 'search').",
    parameters: {
      type: "object",
      properties: {
        action: { type: "string", enum: ["add", "search"] },
        content: { type: "string", minLength: 1, description: "The note to save (action 'add')." },
        query: { type: "string", minLength: 1, description: "What to look for (action 'search')." },
      },
      required: ["action"],
      additionalProperties: false,
    },
  },
];

// Validates arguments against TOOL_SCHEMAS and answers every failure as {"error": ...}, never a throw.
const tools = new ToolRouter({ owner: "{{providerName}} memory", schemas: TOOL_SCHEMAS });

/** Search words of `text`: lower-case, stopwords and FTS syntax dropped (the kit's tokenizer). */
function tokens(text: string): string[] {
  return queryTokens(text);
}

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
  private recallLimit = 3;

  isAvailable(): boolean {
    // Synchronous, no network: check configuration only. getEnv() returns the active profile's
    // $HERMES_HOME/.env value (what `memory setup` saved), else the process environment. This
    // provider works without a key (notes stay local); one that needs its key returns
    // `Boolean(getEnv(API_KEY_ENV))` here and marks the schema field `required: true`.
    return true;
  }

  async initialize(_sessionId: string, ctx: InitContext): Promise<void> {
    // Typed as { recallLimit: number; apiKey?: string }; a bad value throws INVALID_CONFIG naming
    // the key, the value and where it came from. Secrets are read from the environment (the
    // profile's .env first) and never copied into process.env.
    const { config } = await loadProviderConfig(CONFIG_FIELDS, { provider: this.name, hermesHome: ctx.hermesHome });
    this.apiKey = config.apiKey ?? "";
    this.recallLimit = config.recallLimit;
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
    // The model speaks for the session's user (ctx.userId): the tool reaches that user's notes
    // only, and saves under that user. A tool that takes an id looks it up with scope.item(id)
    // (id and user in one condition), so another user's id is answered like an unknown one.
    const scope = new ToolUserScope(this.userId);
    return tools.run(toolName, args, {
      [TOOL_NAME]: (a) => {
        if (a.action === "add" && typeof a.content === "string" && a.content.trim()) {
          return { ok: true, id: this.remember({ content: a.content, kind: "fact", ...(scope.userId ? { userId: scope.userId } : {}) }) };
        }
        if (a.action === "search" && typeof a.query === "string") {
          return { ok: true, results: this.search(a.query, scope.within({ limit: 5 })).map((h) => ({ id: h.id, content: h.content })) };
        }
        return { error: "Use {action: 'add', content} or {action: 'search', query}." };
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
    return `## {{providerName}} memory\nUse the ${TOOL_NAME} tool to save durable notes and to search them.`;
  }

  prefetch(query: string, _options: PrefetchOptions): string {
    // Recall, too, shows the session's user only their own notes.
    const hits = this.search(query, { limit: this.recallLimit, ...(this.userId ? { userId: this.userId } : {}) });
    return formatRecall(hits, { header: "## Recalled notes", maxChars: 2000 });
  }

  syncTurn(userContent: string, assistantContent: string, options: SyncTurnOptions): void {
    if (!this.automaticWrites) return;
    // "<turnAuthor.name or User>: …" and "Assistant: …" lines, the text every provider stores.
    const content = turnText(userContent, assistantContent, options.turnAuthor);
    if (content) this.remember({ content, kind: "turn", sessionId: options.sessionId });
  }

  remember(item: MemoryItem): string {
    if (!this.file) throw new Error("{{providerName}}: initialize() must be called first");
    // Refuse (INVALID_ARGUMENT) an item that could not be stored before it is queued, so a malformed
    // one never holds up the writes queued with it.
    const { content, kind, sessionId, userId, metadata } = parseMemoryItem(item);
    const note: StoredNote = {
      id: `${Date.now().toString(36)}-${(this.counter++).toString(36)}`,
      content,
      kind,
      sessionId,
      userId: userId ?? this.userId,
      createdAt: new Date().toISOString(),
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
    const wanted = new Set(tokens(query));
    if (wanted.size === 0) return [];
    return this.notes
      .filter((n) => (!options.kind || n.kind === options.kind) && (!options.sessionId || n.sessionId === options.sessionId) && (!options.userId || n.userId === options.userId))
      .map((n) => ({ n, score: tokens(n.content).filter((t) => wanted.has(t)).length }))
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
    const before = this.notes.length;
    this.notes = this.notes.filter((n) => n.id !== id);
    if (this.notes.length === before) return false;
    this.rewrite();
    return true;
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
