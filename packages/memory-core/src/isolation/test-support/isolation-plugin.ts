/**
 * A folder plugin for the isolation tests, written the way a ported provider is: synchronous work
 * in its hooks (busy waits), a tool that can crash its thread, and a searchable store whose flush
 * appends to a JSON-lines file under `$HERMES_HOME`.
 */
import fs from "node:fs";
import path from "node:path";

const SOURCE = `import fs from "node:fs";
import path from "node:path";
import { isMainThread } from "node:worker_threads";
import { MemoryProvider, HermesMemoryError } from "@hermes/memory-core";

function busy(ms) { const end = Date.now() + ms; while (Date.now() < end) {} }

class IsolationProbe extends MemoryProvider {
  name = "__NAME__";
  inits = 0;
  turns = [];
  pending = [];
  last = null;
  home = "";
  isAvailable() { return true; }
  initialize(_sessionId, ctx) { this.inits++; this.home = ctx.hermesHome; }
  getToolSchemas() { return [{ name: "__NAME___info", description: "Probe state.", parameters: { type: "object", properties: {} } }]; }
  getConfigSchema() { return [{ key: "level", description: "Level" }]; }
  recallStatus() { return this.last === null ? null : { providerLabel: "__NAME__", count: this.last }; }
  prefetch(query) {
    if (query.includes("slow")) { busy(1500); return "LATE RESULT"; }
    this.last = query.length;
    return "fast:" + query + ":inits=" + this.inits;
  }
  syncTurn(user) {
    if (user.includes("block")) busy(400);
    this.turns.push(user);
  }
  handleToolCall(_name, args) {
    if (args.exit) process.exit(3);
    if (args.crashLater) { setTimeout(() => { throw new Error("asynchronous crash"); }, 1); return "{}"; }
    if (args.typed) throw new HermesMemoryError({ code: "STORAGE_FAILED", message: "The probe's disk is full; free space." });
    if (args.plain) throw new TypeError("boom");
    if (args.unsendable) return () => "a function cannot cross a thread";
    return JSON.stringify({ mainThread: isMainThread, inits: this.inits, turns: this.turns.length });
  }
  file() { return path.join(this.home, "__NAME__-store.jsonl"); }
  stored() {
    return fs.existsSync(this.file()) ? fs.readFileSync(this.file(), "utf8").split("\\n").filter(Boolean).map((l) => JSON.parse(l)) : [];
  }
  remember(item) { const id = "m" + Date.now() + "-" + Math.random(); this.pending.push({ id, content: item.content }); return id; }
  async flush() {
    if (this.pending.some((p) => p.content === "hang")) await new Promise(() => {});
    for (const p of this.pending.splice(0)) fs.appendFileSync(this.file(), JSON.stringify(p) + "\\n");
  }
  search(query) {
    return this.stored().filter((p) => p.content.includes(query))
      .map((p) => ({ id: p.id, content: p.content, kind: "fact", score: 1, createdAt: new Date(0).toISOString(), metadata: {} }));
  }
  get(id) { return this.search("").find((h) => h.id === id) ?? null; }
  forget() { return false; }
  stats() { return { items: this.stored().length, byKind: { turn: 0, fact: this.stored().length, checkpoint: 0 } }; }
  capabilities() { return { filters: false, expiry: false, erasure: false, update: false }; }
}
export function register(ctx) {
  ctx.logger.info("__NAME__ registered in " + (isMainThread ? "the main thread" : "a worker thread"));
  ctx.registerMemoryProvider(new IsolationProbe());
  __EXTRA__
}
`;

/**
 * Write the probe plugin as `$home/plugins/<name>/` (with `plugin.yaml` lines when given, and
 * `register` statements after the provider's, e.g. `ctx.registerHook(...)`).
 */
export function writeIsolationPlugin(home: string, name: string, manifest = "", register = ""): void {
  const dir = path.join(home, "plugins", name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "index.js"), SOURCE.replaceAll("__NAME__", name).replace("__EXTRA__", register));
  fs.writeFileSync(path.join(dir, "plugin.yaml"), `name: ${name}\ndescription: isolation probe\n${manifest}`);
}
