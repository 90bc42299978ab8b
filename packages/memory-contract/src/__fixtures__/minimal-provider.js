// A correct minimal memory provider: JSON file storage under hermesHome, one tool, SearchableMemory,
// idempotent checkpoint API v2. Plain JS so the fixture package (minimal-package/) can load it with
// node directly; types are in minimal-provider.d.ts.
import { createHash, randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { HermesMemoryError, MemoryProvider, allowsAutomaticWrites, atomicJsonWrite } from "@hermes/memory-core";

const TOOL_NAME = "minimal_search";

function terms(text) {
  return String(text).toLowerCase().match(/[a-z0-9]+/g) ?? [];
}

function textOf(message) {
  if (typeof message.content === "string") return message.content;
  if (Array.isArray(message.content)) return message.content.map((p) => p.text ?? "").join(" ");
  return "";
}

export class MinimalProvider extends MemoryProvider {
  name = "minimal";
  preCompressCheckpointApiVersion = 2;

  items = [];
  file = "";
  writes = true;
  userId = undefined;
  closed = false;
  pending = Promise.resolve();
  writeQueued = false;
  lastError = undefined;

  isAvailable() {
    return true;
  }

  initialize(_sessionId, ctx) {
    this.file = path.join(ctx.hermesHome, "minimal-memory", "items.json");
    this.writes = allowsAutomaticWrites(ctx);
    this.userId = typeof ctx.userId === "string" ? ctx.userId : undefined;
    this.items = this.load();
  }

  load() {
    try {
      const parsed = JSON.parse(fs.readFileSync(this.file, "utf8"));
      return Array.isArray(parsed) ? parsed : [];
    } catch {
      return [];
    }
  }

  getToolSchemas() {
    return [
      {
        name: TOOL_NAME,
        description: "Search what the minimal provider remembers.",
        parameters: {
          type: "object",
          properties: {
            query: { type: "string", description: "Words to look for" },
            limit: { type: "integer", minimum: 1, description: "Maximum results" },
          },
          required: ["query"],
        },
      },
    ];
  }

  handleToolCall(toolName, args) {
    if (toolName !== TOOL_NAME) return JSON.stringify({ error: `unknown tool ${toolName}` });
    if (typeof args?.query !== "string") return JSON.stringify({ error: "query must be a string" });
    if (args.limit !== undefined && (!Number.isInteger(args.limit) || args.limit < 1)) {
      return JSON.stringify({ error: "limit must be a positive integer" });
    }
    // The model speaks for the session's user: the tool searches that user's items only.
    const user = this.userId !== undefined ? { userId: this.userId } : {};
    return JSON.stringify({ results: this.search(args.query, { limit: args.limit ?? 5, ...user }).map((h) => h.content) });
  }

  getConfigSchema() {
    return [
      { key: "api_key", description: "API key", secret: true, envVar: "MINIMAL_API_KEY" },
      { key: "mode", description: "Search mode", default: "fast", choices: ["fast", "thorough"] },
    ];
  }

  async saveConfig(values, hermesHome) {
    await atomicJsonWrite(path.join(hermesHome, "minimal.json"), values);
  }

  // Writes are queued and coalesced: the caller never waits for the disk.
  scheduleWrite() {
    if (this.writeQueued) return;
    this.writeQueued = true;
    this.pending = this.pending.then(async () => {
      this.writeQueued = false;
      try {
        await this.persist();
      } catch (error) {
        this.lastError = error;
      }
    });
  }

  async persist() {
    await atomicJsonWrite(this.file, this.items);
  }

  addItem(item) {
    const stored = {
      id: item.id ?? randomUUID(),
      content: item.content,
      kind: item.kind ?? "fact",
      sessionId: item.sessionId,
      userId: item.userId ?? this.userId,
      createdAt: new Date().toISOString(),
      metadata: item.metadata ?? {},
    };
    this.items.push(stored);
    return stored.id;
  }

  /** Refuse an item that could not be stored (the kit's parseMemoryItem checks more; this fixture stays dependency-free). */
  checkItem(item) {
    const refuse = (message) => {
      throw new HermesMemoryError({ code: "INVALID_ARGUMENT", message: `remember(): ${message}` });
    };
    if (item === null || typeof item !== "object") refuse("needs an item object with text content.");
    if (typeof item.content !== "string" || item.content.trim() === "") refuse("content must be text with a non-blank character.");
    if (item.kind !== undefined && !["turn", "fact", "checkpoint"].includes(item.kind)) refuse("kind must be turn, fact or checkpoint.");
    try {
      JSON.stringify(item.metadata ?? {});
    } catch {
      refuse("metadata must be serialisable as JSON.");
    }
  }

  remember(item) {
    this.checkItem(item);
    const id = this.addItem(item);
    this.scheduleWrite();
    return id;
  }

  search(query, options = {}) {
    const limit = options.limit ?? 10;
    if (typeof limit !== "number" || Number.isNaN(limit) || limit < 1) {
      throw new HermesMemoryError({ code: "INVALID_ARGUMENT", message: `search options: limit must be a number of at least 1; got ${String(limit)}.` });
    }
    const wanted = new Set(terms(query));
    const hits = [];
    for (const item of this.items) {
      if (options.userId !== undefined && item.userId !== undefined && item.userId !== options.userId) continue;
      if (options.kind !== undefined && item.kind !== options.kind) continue;
      if (options.sessionId !== undefined && item.sessionId !== options.sessionId) continue;
      const score = terms(item.content).filter((t) => wanted.has(t)).length;
      if (score > 0) hits.push({ ...item, score });
    }
    return hits.sort((a, b) => b.score - a.score).slice(0, Math.floor(limit));
  }

  get(id) {
    return this.items.find((i) => i.id === id) ?? null;
  }

  forget(id) {
    const before = this.items.length;
    this.items = this.items.filter((i) => i.id !== id);
    this.scheduleWrite();
    return this.items.length < before;
  }

  stats() {
    const byKind = { turn: 0, fact: 0, checkpoint: 0 };
    for (const item of this.items) byKind[item.kind] += 1;
    return { items: this.items.length, byKind, location: this.file };
  }

  async flush() {
    await this.pending;
  }

  prefetch(query) {
    return this.search(query, { limit: 5, userId: this.userId })
      .map((h) => h.content)
      .join("\n");
  }

  syncTurn(userContent, assistantContent, options) {
    if (!this.writes || this.closed) return;
    const label = (options.turnAuthor?.name ?? "").trim() || "User";
    const lines = [];
    if (userContent.trim()) lines.push(`${label}: ${userContent.trim()}`);
    if (assistantContent.trim()) lines.push(`Assistant: ${assistantContent.trim()}`);
    this.remember({ content: lines.join("\n"), kind: "turn", sessionId: options.sessionId });
  }

  // The session boundary is a flush point, like onSessionEnd.
  async onSessionSwitch() {
    await this.flush();
    return true;
  }

  // The session boundary is a flush point: the host may exit right after it.
  async onSessionEnd() {
    await this.flush();
    if (this.lastError) throw this.lastError;
  }

  onMemoryWrite(action, _target, content) {
    if (action !== "add" || this.closed) return;
    this.remember({ content, kind: "fact" });
  }

  checkpointText(message) {
    return `${message.role === "user" ? "User" : "Assistant"}: ${textOf(message).trim()}`;
  }

  checkpointKey(message) {
    return createHash("sha256").update(`${message.role}\n${textOf(message)}`).digest("hex");
  }

  async onPreCompress(messages) {
    if (this.closed) return "";
    await this.pending;
    let added = 0;
    for (const message of messages) {
      const id = `ckpt-${this.checkpointKey(message)}`;
      if (this.items.some((i) => i.id === id)) continue;
      this.addItem({ id, content: this.checkpointText(message), kind: "checkpoint" });
      added += 1;
    }
    // Durable before returning: a failure propagates to the caller.
    await this.persist();
    return `checkpoint: ${added} new message(s)`;
  }

  async shutdown() {
    if (this.closed) return;
    this.closed = true;
    await this.flush();
  }
}

/** Entry-point style registration, as a package's main module does it. */
export function register(ctx) {
  ctx.registerMemoryProvider(new MinimalProvider());
}
