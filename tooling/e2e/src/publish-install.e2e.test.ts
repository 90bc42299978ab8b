/**
 * Publish → install, the way it happens for people: every public package is snapshot-released with
 * the repository's own script to a loopback Verdaccio, a third-party provider is scaffolded with the
 * published create package and published too, then plain `npm install` (and `pnpm add`) in empty
 * directories must find, set up, demo and round-trip through the installed packages.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startRegistry, type LocalRegistry } from "./registry.js";
import { run } from "./run.js";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const THIRD_PARTY = "@acme/hermes-memory-notes";
const THIRD_PARTY_PROVIDER = "acme-notes";

let work: string;
let registry: LocalRegistry;
let env: NodeJS.ProcessEnv;

/** Scoped registries only: third-party dependencies still come from the normal registry. */
function writeNpmrc(dir: string): void {
  const host = `//127.0.0.1:${registry.port}/`;
  fs.writeFileSync(
    path.join(dir, ".npmrc"),
    [`@hermes:registry=${registry.url}`, `@acme:registry=${registry.url}`, `${host}:_authToken=e2e-anonymous`, ""].join("\n"),
  );
}

function copyWorkingTree(target: string): void {
  const files = run("git", ["ls-files", "-co", "--exclude-standard", "-z"], { cwd: repoRoot }).stdout.split("\0").filter(Boolean);
  for (const rel of files) {
    const from = path.join(repoRoot, rel);
    if (!fs.existsSync(from) || fs.statSync(from).isDirectory()) continue;
    fs.mkdirSync(path.dirname(path.join(target, rel)), { recursive: true });
    fs.copyFileSync(from, path.join(target, rel));
  }
  // changesets wants a git repository with a main branch.
  const git = (...args: string[]) =>
    run("git", args, {
      cwd: target,
      env: {
        ...env,
        GIT_AUTHOR_NAME: "e2e",
        GIT_AUTHOR_EMAIL: "e2e@example.invalid",
        GIT_COMMITTER_NAME: "e2e",
        GIT_COMMITTER_EMAIL: "e2e@example.invalid",
      },
    });
  git("init", "-q", "-b", "main");
  git("add", "-A");
  git("commit", "-qm", "e2e snapshot");
}

function version(pkgDir: string): string {
  return (JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8")) as { version: string }).version;
}

/** The guide's example provider as a folder plugin (ES module, imports core by name). */
const GUIDE_PROVIDER = `import fs from "node:fs";
import path from "node:path";
import { MemoryProvider, getEnv } from "@hermes/memory-core";

class MyMemoryProvider extends MemoryProvider {
  get name() { return "my-provider"; }
  isAvailable() { return Boolean(getEnv("MY_API_KEY")); }
  unavailableReason() { return "MY_API_KEY is not set"; }
  initialize(sessionId, ctx) {
    this.apiKey = getEnv("MY_API_KEY") ?? "";
    this.sessionId = sessionId;
    this.file = path.join(ctx.hermesHome, "my-provider", "turns.jsonl");
    fs.mkdirSync(path.dirname(this.file), { recursive: true });
    fs.writeFileSync(path.join(ctx.hermesHome, "my-provider", "key-seen"), this.apiKey.slice(-4));
  }
  getConfigSchema() {
    return [{ key: "api_key", description: "My provider API key", secret: true, required: true, envVar: "MY_API_KEY" }];
  }
  getToolSchemas() { return []; }
  syncTurn(user, assistant) {
    fs.appendFileSync(this.file, JSON.stringify({ user, assistant }) + "\\n");
  }
  prefetch(query) {
    if (!fs.existsSync(this.file)) return "";
    const words = query.toLowerCase().match(/[a-z]{4,}/g) ?? [];
    return fs.readFileSync(this.file, "utf8").split("\\n").filter(Boolean).map((l) => JSON.parse(l))
      .filter((t) => words.some((w) => t.user.toLowerCase().includes(w))).map((t) => "- " + t.user).join("\\n");
  }
}

export function register(ctx) { ctx.registerMemoryProvider(new MyMemoryProvider()); }
`;

// A consumer of the installed provider kit: real functions, and with "sqlite" the SQLite store on the
// better-sqlite3 (optional peer) that the SQLite provider brought into the project.
const KIT_CONSUMER = `import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { formatRecall, queryTokens, ToolRouter } from "@hermes/memory-provider-kit";
import { buildFtsQuery, closeSqliteStore, createSqliteDriverLoader, openSqliteStore } from "@hermes/memory-provider-kit/sqlite";
const router = new ToolRouter({ owner: "e2e", schemas: [{ name: "e2e_echo", description: "Echo", parameters: { type: "object", properties: { q: { type: "string" } }, required: ["q"] } }] });
const hit = { id: "1", content: "The deploy moved to Friday.", kind: "fact", score: 1, createdAt: "2026-01-01T00:00:00Z", metadata: {} };
const out = {
  fts: buildFtsQuery('What did "Alice" say about the deploy?!'),
  tokens: queryTokens("Caroline's paintings"),
  routed: router.run("e2e_echo", { q: "hi" }, { e2e_echo: (a) => ({ echo: a.q }) }),
  refused: router.run("e2e_echo", {}, { e2e_echo: () => "unreachable" }).includes("error"),
  recall: formatRecall([hit], { header: "## Recalled", maxChars: 200 }),
};
if (process.argv[2] === "sqlite") {
  // better-sqlite3 (the optional peer) resolved from this project, where the SQLite provider put it.
  const db = openSqliteStore(path.join(fs.mkdtempSync(path.join(os.tmpdir(), "kit-")), "kit.sqlite"), {
    driver: createSqliteDriverLoader(import.meta.url).load(),
    label: "e2e store",
    packageName: "consumer",
    schemaVersion: 1,
    migrate: (db) => db.exec("CREATE VIRTUAL TABLE notes USING fts5(text); INSERT INTO notes (text) VALUES ('The deploy moved to Friday.')"),
  });
  out.matched = db.prepare("SELECT text FROM notes WHERE notes MATCH ?").pluck().all(out.fts);
  closeSqliteStore(db);
}
console.log(JSON.stringify(out));
`;

const KIT_EXPECTED = {
  fts: '"alice" OR "say" OR "deploy"',
  tokens: ["caroline", "paintings"],
  routed: '{"echo":"hi"}',
  refused: true,
  recall: "## Recalled\n- [fact 2026-01-01] The deploy moved to Friday.",
};

describe("publish → install end to end", () => {
  beforeAll(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), "hermes-e2e-"));
    registry = await startRegistry(work);
    env = {
      ...process.env,
      CI: "true",
      TURBO_TELEMETRY_DISABLED: "1",
      npm_config_update_notifier: "false",
      npm_config_fund: "false",
      npm_config_audit: "false",
    };
  });

  afterAll(async () => {
    await registry?.stop();
    if (work && !process.env.KEEP_E2E) fs.rmSync(work, { recursive: true, force: true });
  });

  it("snapshot-releases, scaffolds a third-party provider, and installs everything with npm and pnpm", () => {
    // 1–2. Snapshot-version and publish every public package with the repository's own release script.
    const repo = path.join(work, "repo");
    copyWorkingTree(repo);
    run("pnpm", ["install", "--frozen-lockfile", "--prefer-offline"], { cwd: repo, env });
    writeNpmrc(repo);
    run("pnpm", ["run", "release:snapshot"], { cwd: repo, env });
    const v = {
      core: version(path.join(repo, "packages/memory-core")),
      cli: version(path.join(repo, "packages/memory-cli")),
      contract: version(path.join(repo, "packages/memory-contract")),
      kit: version(path.join(repo, "packages/memory-provider-kit")),
      create: version(path.join(repo, "packages/create-memory-provider")),
      sqlite: version(path.join(repo, "providers/sqlite")),
      vector: version(path.join(repo, "providers/vector")),
      aiSdk: version(path.join(repo, "packages/memory-ai-sdk")),
      mcp: version(path.join(repo, "packages/memory-mcp")),
    };
    expect(v.core).toMatch(/-snapshot-/);

    // 3. Scaffold a third-party provider with the published create package, build, test, publish.
    const authoring = path.join(work, "authoring");
    fs.mkdirSync(authoring);
    writeNpmrc(authoring);
    run(
      "npm",
      [
        "exec",
        "--yes",
        `--package=@hermes/create-memory-provider@${v.create}`,
        "--",
        "create-memory-provider",
        "acme-notes",
        "--name",
        THIRD_PARTY_PROVIDER,
        "--package-name",
        THIRD_PARTY,
        "--description",
        "Acme notes",
        "--yes",
      ],
      { cwd: authoring, env },
    );
    const third = path.join(authoring, "acme-notes");
    writeNpmrc(third);
    run("npm", ["install"], { cwd: third, env });
    run("npm", ["run", "build"], { cwd: third, env });
    run("npm", ["test"], { cwd: third, env });
    run("npm", ["publish", "--ignore-scripts"], { cwd: third, env });

    // 4. An empty project installs the CLI, the SQLite provider and the third-party provider with npm.
    const consumer = path.join(work, "consumer");
    fs.mkdirSync(consumer);
    writeNpmrc(consumer);
    run("npm", ["init", "-y"], { cwd: consumer, env });
    run(
      "npm",
      [
        "install",
        `@hermes/memory-cli@${v.cli}`,
        `@hermes/memory-sqlite@${v.sqlite}`,
        `@hermes/memory-vector@${v.vector}`,
        `@hermes/memory-contract@${v.contract}`,
        `@hermes/memory-provider-kit@${v.kit}`,
        THIRD_PARTY,
      ],
      { cwd: consumer, env },
    );
    // The integrations with the libraries they plug into (versions the packages are tested with).
    run(
      "npm",
      [
        "install",
        `@hermes/memory-ai-sdk@${v.aiSdk}`,
        `@hermes/memory-mcp@${v.mcp}`,
        `@hermes/memory-core@${v.core}`,
        "ai@6.0.326",
        "zod@4.1.12",
        "@modelcontextprotocol/sdk@1.32.2",
      ],
      { cwd: consumer, env },
    );

    // 5. Discovery, the contract kit, setup, the demo and a host script through the installed packages.
    const home = path.join(work, "home");
    const cli = (...args: string[]) =>
      run("npx", ["--no-install", "hermes-memory", ...args, "--hermes-home", home], { cwd: consumer, env });
    const listed = JSON.parse(cli("plugins", "list", "--json").stdout) as { providers: Array<{ name: string; source: string }> };
    expect(listed.providers).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: "sqlite", source: "package" }),
        expect.objectContaining({ name: "vector", source: "package" }),
        expect.objectContaining({ name: THIRD_PARTY_PROVIDER, source: "package" }),
      ]),
    );
    run("npx", ["--no-install", "hermes-memory-contract", THIRD_PARTY], { cwd: consumer, env });
    run("npx", ["--no-install", "hermes-memory-contract", "@hermes/memory-vector"], { cwd: consumer, env });
    // The SQLite provider's contract run includes the SearchableMemory v2 clauses it declares
    // (filters, expiry, erasure, update, two users on one instance).
    const sqliteContract = run("npx", ["--no-install", "hermes-memory-contract", "@hermes/memory-sqlite"], { cwd: consumer, env });
    expect(sqliteContract.stdout).toMatch(/C-ERASURE-1/);
    cli("memory", "setup", "sqlite", "--yes");
    const demo = cli("demo");
    expect(demo.stdout).toMatch(/3\/3 facts from session one recalled/);

    const script = path.join(consumer, "host.mjs");
    fs.writeFileSync(
      script,
      `import { openMemory } from "@hermes/memory-core";
const options = { hermesHome: ${JSON.stringify(home)}, cwd: ${JSON.stringify(consumer)} };
const first = await openMemory({ ...options, sessionId: "host-1" });
first.syncAll("My favourite tea is genmaicha from Kyoto.", "Noted: genmaicha.", { sessionId: "host-1" });
await first.flushPending();
await first.shutdownAll();
const second = await openMemory({ ...options, sessionId: "host-2" });
const recalled = await second.prefetchAll("Which tea do I like?", { sessionId: "host-2" });
console.log(JSON.stringify({ providers: second.providers.map((p) => p.name), recalled }));
await second.shutdownAll();
`,
    );
    const host = JSON.parse(run(process.execPath, [script], { cwd: consumer, env }).stdout.trim().split("\n").pop()!) as {
      providers: string[];
      recalled: string;
    };
    expect(host.providers).toEqual(["builtin", "sqlite"]);
    expect(host.recalled).toContain("genmaicha");

    // SearchableMemory v2 through the installed packages: a filtered search, a scoped erasure and
    // an expiry, on the provider openMemory loaded.
    const v2 = path.join(consumer, "v2.mjs");
    fs.writeFileSync(
      v2,
      `import { openMemory, searchCapabilities } from "@hermes/memory-core";
const memory = await openMemory({ hermesHome: ${JSON.stringify(home)}, cwd: ${JSON.stringify(consumer)}, sessionId: "v2" });
const provider = memory.providers.find((p) => p.name === "sqlite");
await provider.remember({ content: "Quarterly budget review with finance", userId: "ana", tags: ["work"], metadata: { priority: 3 } });
await provider.remember({ content: "Budget for the family holiday", userId: "ben", tags: ["home"], metadata: { priority: 1 } });
await provider.remember({ content: "Budget note that expires at once", userId: "ana", ttlMs: 1 });
await new Promise((resolve) => setTimeout(resolve, 20));
const filtered = (await provider.search("budget", { userId: "ana", metadata: { priority: { $gte: 2 } } })).map((h) => h.content);
const erased = await provider.forgetWhere({ userId: "ben" });
const after = (await provider.search("budget")).map((h) => h.content);
let refused = "";
try { await provider.search("budget", { metadata: { priority: { $regex: "1" } } }); } catch (error) { refused = error.code; }
console.log(JSON.stringify({ capabilities: searchCapabilities(provider), filtered, erased, after, refused }));
await memory.shutdownAll();
`,
    );
    const v2Out = JSON.parse(run(process.execPath, [v2], { cwd: consumer, env }).stdout.trim().split("\n").pop()!) as Record<
      string,
      unknown
    >;
    expect(v2Out).toEqual({
      capabilities: { filters: true, expiry: true, erasure: true, update: true },
      filtered: ["Quarterly budget review with finance"],
      erased: 1,
      after: ["Quarterly budget review with finance"],
      refused: "INVALID_ARGUMENT",
    });

    // The installed provider kit is importable from the consumer, and its functions work.
    fs.writeFileSync(path.join(consumer, "kit.mjs"), KIT_CONSUMER);
    const kitOut = JSON.parse(
      run(process.execPath, [path.join(consumer, "kit.mjs"), "sqlite"], { cwd: consumer, env })
        .stdout.trim()
        .split("\n")
        .pop()!,
    ) as Record<string, unknown>;
    expect(kitOut).toEqual({ ...KIT_EXPECTED, matched: ["The deploy moved to Friday."] });

    // 5b. The provider-author guide's example as a folder plugin: $HERMES_HOME/plugins/my-provider/
    // index.js imports @hermes/memory-core with no node_modules of its own, checks its key with
    // getEnv(); `memory setup` puts the key in .env; two host processes (no key exported) recall.
    const guideHome = path.join(work, "home-guide");
    fs.mkdirSync(path.join(guideHome, "plugins", "my-provider"), { recursive: true });
    fs.writeFileSync(path.join(guideHome, "plugins", "my-provider", "index.js"), GUIDE_PROVIDER);
    const guideKey = "sk-guide-e2e-0123WXYZ";
    run(
      "npx",
      [
        "--no-install",
        "hermes-memory",
        "memory",
        "setup",
        "my-provider",
        "--set",
        `api_key=${guideKey}`,
        "--yes",
        "--hermes-home",
        guideHome,
      ],
      { cwd: consumer, env },
    );
    expect(fs.readFileSync(path.join(guideHome, ".env"), "utf8")).toContain(`MY_API_KEY=${guideKey}`);
    const guideHost = path.join(consumer, "guide-host.mjs");
    fs.writeFileSync(
      guideHost,
      `import { openMemory } from "@hermes/memory-core";
const [, , mode, hermesHome, sessionId] = process.argv;
const memory = await openMemory({ hermesHome, sessionId, strict: true });
let recalled = "";
if (mode === "write") {
  memory.syncAll("My favourite tea is genmaicha from Kyoto.", "Noted: genmaicha.", { sessionId });
  await memory.flushPending();
} else recalled = await memory.prefetchAll("Which tea do I like? genmaicha", { sessionId });
console.log(JSON.stringify({ providers: memory.providers.map((p) => p.name), recalled }));
await memory.shutdownAll();
`,
    );
    const guideRun = (mode: string, sessionId: string) =>
      JSON.parse(
        run(process.execPath, [guideHost, mode, guideHome, sessionId], { cwd: consumer, env: { ...env, MY_API_KEY: "" } })
          .stdout.trim()
          .split("\n")
          .pop()!,
      ) as { providers: string[]; recalled: string };
    expect(guideRun("write", "guide-1").providers).toEqual(["builtin", "my-provider"]);
    expect(fs.readFileSync(path.join(guideHome, "my-provider", "key-seen"), "utf8")).toBe("WXYZ");
    expect(guideRun("read", "guide-2").recalled).toContain("genmaicha from Kyoto");

    // 5c. The AI SDK middleware: a fact told in one session is in the prompt of the next one. No model
    // is reachable here, so the model is the AI SDK's own mock; everything else is the installed code.
    const agent = path.join(consumer, "agent.mjs");
    fs.writeFileSync(
      agent,
      `import { generateText, wrapLanguageModel } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { openMemory } from "@hermes/memory-core";
import { memoryMiddleware } from "@hermes/memory-ai-sdk";
const options = { hermesHome: ${JSON.stringify(home)}, cwd: ${JSON.stringify(consumer)} };
const usage = { inputTokens: { total: 1, noCache: 1 }, outputTokens: { total: 1, text: 1 } };
const reply = (text) => new MockLanguageModelV3({ doGenerate: { content: [{ type: "text", text }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] } });
async function turn(sessionId, prompt, answer) {
  const memory = await openMemory({ ...options, sessionId });
  const model = reply(answer);
  const result = await generateText({ model: wrapLanguageModel({ model, middleware: memoryMiddleware(memory, { sessionId }) }), prompt });
  await memory.shutdownAll();
  return { text: result.text, prompt: JSON.stringify(model.doGenerateCalls[0].prompt) };
}
await turn("agent-1", "Our office plant is a fiddle-leaf fig named Gustav.", "Noted, Gustav the fig.");
const second = await turn("agent-2", "What is the office plant called?", "Gustav.");
console.log(JSON.stringify({ text: second.text, recalled: second.prompt.includes("Gustav") && second.prompt.includes("memory-context") }));
`,
    );
    const agentOut = JSON.parse(run(process.execPath, [agent], { cwd: consumer, env }).stdout.trim().split("\n").pop()!) as {
      text: string;
      recalled: boolean;
    };
    expect(agentOut).toEqual({ text: "Gustav.", recalled: true });

    // 5d. The MCP server from the installed CLI, driven by the MCP SDK's own client over stdio.
    const mcpClient = path.join(consumer, "mcp-client.mjs");
    fs.writeFileSync(
      mcpClient,
      `import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
const transport = new StdioClientTransport({ command: process.execPath, args: [${JSON.stringify(path.join(consumer, "node_modules/@hermes/memory-cli/dist/bin.js"))}, "mcp", "--hermes-home", ${JSON.stringify(home)}], cwd: ${JSON.stringify(consumer)} });
const client = new Client({ name: "e2e", version: "1.0.0" });
await client.connect(transport);
const tools = (await client.listTools()).tools.map((t) => t.name);
const remembered = await client.callTool({ name: "remember", arguments: { content: "The e2e canary is named wren." } });
const found = await client.callTool({ name: "search", arguments: { query: "canary wren" } });
await client.close();
console.log(JSON.stringify({ tools, remembered: !remembered.isError, found: found.content[0].text.includes("wren") }));
`,
    );
    const mcpOut = JSON.parse(run(process.execPath, [mcpClient], { cwd: consumer, env }).stdout.trim().split("\n").pop()!) as {
      tools: string[];
      remembered: boolean;
      found: boolean;
    };
    // One tool per action: the generic tools replace the provider's own search/remember/forget.
    expect(mcpOut.tools).toEqual(expect.arrayContaining(["memory", "search", "remember", "forget", "get", "sqlite_memory_list"]));
    expect(mcpOut.tools).not.toContain("sqlite_memory_search");
    expect(mcpOut).toMatchObject({ remembered: true, found: true });

    // 6. The same set with pnpm (strict node_modules): discovery still finds both package providers.
    const strict = path.join(work, "consumer-pnpm");
    fs.mkdirSync(strict);
    writeNpmrc(strict);
    fs.writeFileSync(path.join(strict, "package.json"), JSON.stringify({ name: "consumer-pnpm", private: true, type: "module" }));
    run(
      "pnpm",
      [
        "add",
        "--ignore-scripts",
        `@hermes/memory-cli@${v.cli}`,
        `@hermes/memory-sqlite@${v.sqlite}`,
        `@hermes/memory-vector@${v.vector}`,
        `@hermes/memory-provider-kit@${v.kit}`,
        THIRD_PARTY,
      ],
      { cwd: strict, env },
    );
    const strictList = JSON.parse(
      run(
        process.execPath,
        [
          path.join(strict, "node_modules/@hermes/memory-cli/dist/bin.js"),
          "plugins",
          "list",
          "--json",
          "--hermes-home",
          path.join(work, "home-pnpm"),
        ],
        { cwd: strict, env },
      ).stdout,
    ) as { providers: Array<{ name: string; source: string }> };
    expect(strictList.providers.map((p) => `${p.name}:${p.source}`).sort()).toEqual(
      expect.arrayContaining([`${THIRD_PARTY_PROVIDER}:package`, "sqlite:package", "vector:package"]),
    );
    // The kit under pnpm's strict layout: its own dependencies and its core peer resolve (no SQLite here:
    // install scripts were skipped, so better-sqlite3 is not built).
    fs.writeFileSync(path.join(strict, "kit.mjs"), KIT_CONSUMER);
    const strictKit = JSON.parse(
      run(process.execPath, [path.join(strict, "kit.mjs")], { cwd: strict, env })
        .stdout.trim()
        .split("\n")
        .pop()!,
    ) as Record<string, unknown>;
    expect(strictKit).toEqual(KIT_EXPECTED);
  });
});
