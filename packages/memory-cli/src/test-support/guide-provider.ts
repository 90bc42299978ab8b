/**
 * The provider-author guide's example provider as a folder plugin
 * (`$HERMES_HOME/plugins/my-provider/index.js`): it imports `@hermes/memory-core` by name (no
 * node_modules of its own), checks its key with `getEnv()` in `isAvailable()`, reads it in
 * `initialize()`, stores turns under `hermesHome` and recalls them in `prefetch()`.
 */
export const GUIDE_PROVIDER_SOURCE = `import fs from "node:fs";
import path from "node:path";
import { MemoryProvider, getEnv } from "@hermes/memory-core";

class MyMemoryProvider extends MemoryProvider {
  get name() { return "my-provider"; }

  // No network: only whether the key is configured.
  isAvailable() { return Boolean(getEnv("MY_API_KEY")); }
  unavailableReason() { return "MY_API_KEY is not set; run \`hermes-memory memory setup my-provider\`"; }

  initialize(sessionId, ctx) {
    this.apiKey = getEnv("MY_API_KEY") ?? "";
    this.sessionId = sessionId;
    this.file = path.join(ctx.hermesHome, "my-provider", "turns.jsonl");
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    // Proof for tests: which key the provider saw (last 4 characters only).
    fs.writeFileSync(path.join(ctx.hermesHome, "my-provider", "key-seen"), this.apiKey.slice(-4));
  }

  getConfigSchema() {
    return [{ key: "api_key", description: "My provider API key", secret: true, required: true, envVar: "MY_API_KEY", url: "https://my-provider.example/keys" }];
  }

  getToolSchemas() { return []; }

  syncTurn(user, assistant) {
    fs.appendFileSync(this.file, JSON.stringify({ session: this.sessionId, user, assistant }) + "\\n");
  }

  prefetch(query) {
    if (!fs.existsSync(this.file)) return "";
    const words = query.toLowerCase().match(/[a-z]{4,}/g) ?? [];
    return fs.readFileSync(this.file, "utf8").split("\\n").filter(Boolean).map((line) => JSON.parse(line))
      .filter((t) => words.some((w) => t.user.toLowerCase().includes(w)))
      .map((t) => "- " + t.user).join("\\n");
  }
}

export function register(ctx) {
  ctx.registerMemoryProvider(new MyMemoryProvider());
}
`;

/** A host script: one `openMemory()` session that writes a turn (argv[2] = "write") or recalls. */
export function guideHostScript(coreSpecifier: string): string {
  return `import { openMemory } from ${JSON.stringify(coreSpecifier)};
const [, , mode, hermesHome, sessionId] = process.argv;
const memory = await openMemory({ hermesHome, sessionId, strict: true });
let recalled = "";
if (mode === "write") {
  memory.syncAll("My favourite tea is genmaicha from Kyoto.", "Noted: genmaicha.", { sessionId });
  await memory.flushPending();
} else {
  recalled = await memory.prefetchAll("Which tea do I like? genmaicha", { sessionId });
}
console.log(JSON.stringify({ providers: memory.providers.map((p) => p.name), recalled }));
await memory.shutdownAll();
`;
}
