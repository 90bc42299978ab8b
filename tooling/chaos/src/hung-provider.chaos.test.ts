// Hung providers: a provider whose import, initialize(), handleToolCall(), onSessionEnd() or
// shutdown() never settles must cost a host at most the configured bound. Each case runs a real
// host process (openMemory → tool call → onSessionEnd → shutdownAll) or the real CLI against a
// folder plugin in $HERMES_HOME/plugins, and is compared with the same run against a healthy
// provider, so machine load cancels out of the timing.
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

const CHAOS_DIR = fileURLToPath(new URL("..", import.meta.url));
const CORE_URL = pathToFileURL(fs.realpathSync(path.join(CHAOS_DIR, "node_modules/@hermes/memory-core/dist/index.js"))).href;
const CLI_BIN = fs.realpathSync(path.join(CHAOS_DIR, "node_modules/@hermes/memory-cli/dist/bin.js"));

const BOUND_MS = 300;
const SLACK_MS = 2000;
const NEVER = "new Promise(() => {})";
// Hangs that also hold the event loop open: the worst case for a process trying to exit.
const HOLD = "setInterval(() => {}, 1000);";

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

function run(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, args, { env: { ...process.env, ...env, HERMES_HOME: "" }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const killer = setTimeout(() => child.kill("SIGKILL"), 60_000);
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(killer);
      resolve({ code, stdout, stderr, ms: performance.now() - started });
    });
  });
}

/** A host: openMemory, one tool call, onSessionEnd, shutdownAll; prints what it saw as JSON. */
const HOST = `
import { openMemory } from ${JSON.stringify(CORE_URL)};
const [home, tool] = process.argv.slice(2);
const warnings = [];
const logger = { debug() {}, info() {}, warn: (m) => { warnings.push(m); process.stderr.write("warn: " + m + "\\n"); }, error: (m) => process.stderr.write("error: " + m + "\\n") };
const manager = await openMemory({ sessionId: "chaos", hermesHome: home, cwd: home, logger, hookTimeoutMs: ${BOUND_MS}, importTimeoutMs: ${BOUND_MS} });
const providers = manager.providers.map((p) => p.name);
const toolResult = await manager.handleToolCall(manager.hasTool(tool) ? tool : "memory", manager.hasTool(tool) ? { q: "x" } : { action: "add", target: "user", content: "Prefers tea" });
await manager.onSessionEnd([{ role: "user", content: "bye" }]);
const drain = await manager.shutdownAll();
process.stdout.write(JSON.stringify({ providers, toolResult, drain, warnings }));
// A host exits explicitly: a stuck provider call may still hold the event loop.
process.exit(0);
`;

function providerSource(name: string, hooks: { topLevel?: string; body?: string }): string {
  return `import { MemoryProvider } from ${JSON.stringify(CORE_URL)};
${hooks.topLevel ?? ""}
class ChaosProvider extends MemoryProvider {
  name = ${JSON.stringify(name)};
  isAvailable() { return true; }
  initialize() {}
  getToolSchemas() { return [{ name: "chaos_tool", description: "chaos", parameters: { type: "object", properties: {} } }]; }
  handleToolCall() { return JSON.stringify({ ok: true }); }
  getConfigSchema() { return []; }
  remember() { return "1"; }
  search() { return []; }
  get() { return null; }
  forget() { return false; }
  stats() { return { items: 0, byKind: { turn: 0, fact: 0, checkpoint: 0 } }; }
  flush() {}
  ${hooks.body ?? ""}
}
export function register(ctx) { ctx.registerMemoryProvider(new ChaosProvider()); }
`;
}

let root: string;
beforeEach(() => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "hermes-chaos-hung-")));
  fs.writeFileSync(path.join(root, "host.mjs"), HOST);
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

function home(name: string, hooks: { topLevel?: string; body?: string }): string {
  const dir = path.join(root, name);
  fs.mkdirSync(path.join(dir, "plugins", name), { recursive: true });
  fs.writeFileSync(path.join(dir, "plugins", name, "plugin.yaml"), `name: ${name}\nversion: 1.0.0\n`);
  fs.writeFileSync(path.join(dir, "plugins", name, "index.js"), providerSource(name, hooks));
  fs.writeFileSync(path.join(dir, "config.yaml"), `memory:\n  provider: ${name}\n`);
  return dir;
}

async function host(
  name: string,
  hooks: { topLevel?: string; body?: string },
): Promise<
  Run & {
    report: {
      providers: string[];
      toolResult: string;
      drain: { stuckProviders: Array<{ name: string; hook: string }> };
      warnings: string[];
    };
  }
> {
  const result = await run([path.join(root, "host.mjs"), home(name, hooks), "chaos_tool"]);
  expect(result.code, result.stderr).toBe(0);
  return { ...result, report: JSON.parse(result.stdout) };
}

describe("a host with a hung provider (real processes)", () => {
  let healthyMs = 0;
  beforeEach(async () => {
    if (healthyMs > 0) return;
    const healthy = await host("healthy", {});
    expect(healthy.report.providers).toEqual(["builtin", "healthy"]);
    expect(healthy.report.warnings).toEqual([]);
    healthyMs = healthy.ms;
  });

  const cases: Array<{
    hook: string;
    hooks: { topLevel?: string; body?: string };
    warning: RegExp;
    bounds: number;
    check: (r: Awaited<ReturnType<typeof host>>["report"], name: string) => void;
  }> = [
    {
      hook: "import",
      hooks: { topLevel: `${HOLD}\nawait ${NEVER};` },
      warning:
        /Memory provider 'hung-import': importing the entry from .* did not finish within 0\.3s.*Continuing with built-in memory only/,
      bounds: 1,
      check: (r) => expect(r.providers).toEqual(["builtin"]),
    },
    {
      hook: "initialize",
      hooks: { body: `initialize() { ${HOLD} return ${NEVER}; }` },
      warning: /Memory provider 'hung-initialize' initialize timed out after 0\.3s/,
      bounds: 1,
      check: (r) => expect(r.providers).toEqual(["builtin"]),
    },
    {
      hook: "handleToolCall",
      hooks: { body: `handleToolCall() { ${HOLD} return ${NEVER}; }` },
      warning: /Memory provider 'hung-handle-tool-call' handle_tool_call\(chaos_tool\) timed out after 0\.3s/,
      bounds: 1,
      check: (r) =>
        expect(JSON.parse(r.toolResult).error).toContain(
          "Memory tool 'chaos_tool' timed out after 0.3s (provider 'hung-handle-tool-call')",
        ),
    },
    {
      hook: "onSessionEnd",
      hooks: { body: `onSessionEnd() { ${HOLD} return ${NEVER}; }` },
      warning: /Memory provider 'hung-on-session-end' on_session_end timed out after 0\.3s/,
      bounds: 1,
      check: (r) => expect(r.providers).toEqual(["builtin", "hung-on-session-end"]),
    },
    {
      hook: "shutdown",
      hooks: { body: `shutdown() { ${HOLD} return ${NEVER}; }` },
      warning: /Memory provider 'hung-shutdown' shutdown timed out after 0\.3s/,
      bounds: 1,
      check: (r, name) => expect(r.drain.stuckProviders.map((s) => [s.name, s.hook])).toEqual([[name, "shutdown"]]),
    },
  ];

  for (const { hook, hooks, warning, bounds, check } of cases) {
    it(`${hook} never settles: the host finishes within the bound and the warning names provider and hook`, async () => {
      // Provider names are lower-case.
      const name = `hung-${hook.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
      const result = await host(name, hooks);
      expect(result.stderr).toMatch(warning);
      check(result.report, name);
      expect(result.ms).toBeGreaterThanOrEqual(bounds * BOUND_MS);
      expect(result.ms, `healthy run took ${healthyMs.toFixed(0)} ms`).toBeLessThan(healthyMs + bounds * BOUND_MS + SLACK_MS);
    });
  }
});

describe("the CLI with a hung provider (real processes)", () => {
  const env = { HERMES_MEMORY_IMPORT_TIMEOUT_MS: String(BOUND_MS), HERMES_MEMORY_HOOK_TIMEOUT_MS: String(BOUND_MS) };

  it("memory status and plugins list --check exit 0 promptly with a hung import and a hung initializeForInspection", async () => {
    const healthyHome = home("healthy", {});
    const baselineStatus = await run([CLI_BIN, "--hermes-home", healthyHome, "memory", "status"], env);
    expect(baselineStatus.code, baselineStatus.stderr).toBe(0);
    const baselineList = await run([CLI_BIN, "--hermes-home", healthyHome, "plugins", "list", "--check"], env);
    expect(baselineList.code, baselineList.stderr).toBe(0);

    const importHome = home("cli-hung-import", { topLevel: `${HOLD}\nawait ${NEVER};` });
    const status = await run([CLI_BIN, "--hermes-home", importHome, "memory", "status"], env);
    expect(status.code).toBe(0);
    expect(status.stderr).toContain("Memory provider 'cli-hung-import': importing the entry");
    expect(status.ms).toBeLessThan(baselineStatus.ms + BOUND_MS + SLACK_MS);

    const list = await run([CLI_BIN, "--hermes-home", importHome, "plugins", "list", "--check"], env);
    expect(list.code).toBe(0);
    expect(list.stderr).toContain("Memory provider 'cli-hung-import': importing the entry");
    expect(list.ms).toBeLessThan(baselineList.ms + BOUND_MS + SLACK_MS);

    const initHome = home("cli-hung-inspect", { body: `initializeForInspection() { ${HOLD} return ${NEVER}; }` });
    const inspect = await run([CLI_BIN, "--hermes-home", initHome, "memory", "status"], env);
    expect(inspect.code).toBe(0);
    expect(inspect.stderr).toContain("Memory provider 'cli-hung-inspect' initializeForInspection timed out after 0.3s");
    expect(inspect.ms).toBeLessThan(baselineStatus.ms + BOUND_MS + SLACK_MS);
  });
});
