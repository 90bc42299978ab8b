import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";
import type { Command } from "commander";
import {
  HermesMemoryError,
  applySetup,
  closestNames,
  describeError,
  discoverMemoryProviders,
  installCommandHint,
  isCoreMemoryProvider,
  loadMemoryProvider,
  openMemory,
  type ChatMessage,
  type Logger,
  type MemoryManager,
} from "@hermes/memory-core";
import { discoveryScope, type CliContext } from "../cli-context.js";
import type { CliIo } from "../cli-io.js";
import { DEMO_CONVERSATION, recallMentions, type DemoConversation, type DemoQuestion, type DemoSession } from "../demo-conversation.js";
import { renderTable } from "../output/table.js";
import { providerAvailability } from "../provider-availability.js";
import { withContext } from "../with-context.js";

/** The provider the demo activates when it is installed. */
export const DEMO_PROVIDER = "sqlite";
/** The npm package of the demo provider (named in the install hint). */
export const DEMO_PROVIDER_PACKAGE = "@hermes/memory-sqlite";

/** Per-session numbers of `demo --json`. */
export interface DemoSessionReport {
  id: string;
  title: string;
  turns: number;
  notes: number;
  /** Mean time `syncAll` took to return (it only queues), microseconds. */
  syncAllMeanMicros: number;
  /** Session end + draining the background queue, milliseconds. */
  endMs: number;
}

/** Per-question result of `demo --json`. */
export interface DemoQuestionReport {
  question: string;
  fact: string;
  recalled: string;
  found: boolean;
  ms: number;
}

/** The JSON document of `demo --json`. */
export interface DemoReport {
  hermesHome: string;
  kept: boolean;
  provider: string;
  providers: Array<{ name: string; source: string; version: string | null; location: string }>;
  sessions: DemoSessionReport[];
  recallMode: "prefetch" | "system-prompt";
  questions: DemoQuestionReport[];
  recalledCount: number;
  totalMs: number;
  warnings: string[];
}

/** Options of `demo`. */
export interface DemoOptions {
  keep?: boolean;
  /** Provider to activate (default `sqlite`); `builtin` runs with built-in memory only. */
  provider?: string;
}

/** Add `demo`. */
export function registerDemoCommand(program: Command, io: CliIo): void {
  program
    .command("demo")
    .description("replay a sample conversation through memory (two sessions, a restart) and show what is recalled")
    .option("--keep", "keep the temporary Hermes home instead of removing it")
    .option("--provider <name>", `provider to demo (\`builtin\` for built-in memory only)`, DEMO_PROVIDER)
    .action(withContext(io, (ctx, options: DemoOptions) => demoCommand(ctx, options)));
}

function collectingLogger(warnings: string[]): Logger {
  const noop = () => {};
  return { debug: noop, info: noop, warn: (m) => warnings.push(m), error: (m) => warnings.push(m) };
}

async function activateDemoProvider(ctx: CliContext, name: string): Promise<{ ok: true } | { ok: false; reason: string }> {
  try {
    const provider = await loadMemoryProvider(name, { ...discoveryScope(ctx), registerSkills: false });
    const availability = providerAvailability(provider, { hermesHome: ctx.hermesHome, env: ctx.io.env });
    if (!availability.available) return { ok: false, reason: availability.reason };
    await applySetup(provider, {}, { hermesHome: ctx.hermesHome, acceptDefaults: true });
    return { ok: true };
  } catch (error) {
    return { ok: false, reason: describeError(error) };
  }
}

async function replaySession(
  session: DemoSession,
  open: (sessionId: string, title: string) => Promise<MemoryManager>,
): Promise<DemoSessionReport> {
  const manager = await open(session.id, session.title);
  const messages: ChatMessage[] = [];
  let syncMicros = 0;
  try {
    for (const [index, turn] of session.turns.entries()) {
      await manager.onTurnStart(index + 1, turn.user);
      const turnMessages: ChatMessage[] = [
        { role: "user", content: turn.user },
        { role: "assistant", content: turn.assistant },
      ];
      const started = performance.now();
      manager.syncAll(turn.user, turn.assistant, { sessionId: session.id, messages: turnMessages });
      syncMicros += (performance.now() - started) * 1000;
      messages.push(...turnMessages);
    }
    // As a model would: save the durable facts with the built-in memory tool, mirrored to the provider.
    for (const note of session.notes) {
      const args = { action: "add", target: note.target, content: note.content };
      const result = await manager.handleToolCall("memory", args, { sessionId: session.id });
      await manager.notifyMemoryToolWrite(result, args, {
        buildMetadata: () => ({ writeOrigin: "assistant_tool", sessionId: session.id, platform: "cli", toolName: "memory" }),
      });
    }
    const ending = performance.now();
    await manager.onSessionEnd(messages);
    await manager.flushPending(10_000);
    await manager.shutdownAll();
    return {
      id: session.id,
      title: session.title,
      turns: session.turns.length,
      notes: session.notes.length,
      syncAllMeanMicros: Math.round((syncMicros / Math.max(1, session.turns.length)) * 10) / 10,
      endMs: round(performance.now() - ending),
    };
  } catch (error) {
    await manager.shutdownAll().catch(() => undefined);
    throw error;
  }
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

async function askQuestions(
  conversation: DemoConversation,
  manager: MemoryManager,
  mode: DemoReport["recallMode"],
  sessionId: string,
): Promise<DemoQuestionReport[]> {
  const reports: DemoQuestionReport[] = [];
  const systemPrompt = mode === "system-prompt" ? await manager.buildSystemPrompt() : "";
  for (const q of conversation.questions) {
    const started = performance.now();
    const recalled = mode === "prefetch" ? await manager.prefetchAll(q.question, { sessionId }) : systemPrompt;
    const ms = mode === "prefetch" ? round(performance.now() - started) : 0;
    reports.push({ question: q.question, fact: q.fact, recalled, found: recallMentions(recalled, q), ms });
  }
  return reports;
}

/** The recalled lines worth showing for a question: those naming the fact (in recall order), else the first few. */
function excerpt(recalled: string, question: DemoQuestion, maxLines = 3): string[] {
  const lines = recalled
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => (l !== "" && !/^[═─=#-]/.test(l)) || /^- /.test(l));
  const mentions = (l: string) => question.expect.some((w) => l.toLowerCase().includes(w.toLowerCase()));
  const relevant = lines.filter(mentions);
  return (relevant.length > 0 ? relevant : lines).slice(0, maxLines).map((l) => (l.length > 110 ? `${l.slice(0, 107)}...` : l));
}

/** Create the demo's home; a path that cannot be one is a `STORAGE_FAILED` error saying what to pass. */
function createDemoHome(home: string): void {
  try {
    fs.mkdirSync(home, { recursive: true });
  } catch (error) {
    throw new HermesMemoryError({
      code: "STORAGE_FAILED",
      message: `Cannot use ${home} as the demo's Hermes home: ${describeError(error)}. Pass --hermes-home a directory (new or existing), or omit it for a temporary home.`,
      cause: error,
    });
  }
}

type DiscoveredProvider = Awaited<ReturnType<typeof discoverMemoryProviders>>["providers"][number];

/** Step 1: the providers discovery finds from the demo's home, as a table. */
async function showProvidersFound(ctx: CliContext, home: string): Promise<DiscoveredProvider[]> {
  const { out } = ctx;
  const c = out.colors;
  // The one discovery rule every command and openMemory() use: project, $HERMES_HOME, and the
  // installation the CLI runs from (a global install included).
  const { providers } = await discoverMemoryProviders({ ...discoveryScope(ctx), hermesHome: home });
  out.line(c.bold("1. Memory providers found"));
  if (providers.length === 0) out.line("   none");
  else
    out.line(
      renderTable(
        ["NAME", "SOURCE", "VERSION", "LOCATION"],
        providers.map((p) => [p.name, p.source, p.version ?? "-", p.dir]),
        (h) => c.bold(h),
      )
        .split("\n")
        .map((l) => `   ${l}`)
        .join("\n"),
    );
  out.line("");
  return providers;
}

/**
 * Step 2: activate `wanted` in the demo's home when it is installed and usable; otherwise say why
 * and how to get it. Returns the provider activated, `""` for built-in memory only.
 */
async function chooseDemoProvider(demoCtx: CliContext, wanted: string, providers: readonly DiscoveredProvider[]): Promise<string> {
  const { out } = demoCtx;
  const c = out.colors;
  const home = demoCtx.hermesHome;
  out.line(c.bold("2. Provider"));
  let provider = "";
  if (wanted === "") {
    out.line("   Built-in memory only (MEMORY.md / USER.md), as asked.");
  } else if (providers.some((p) => p.name === wanted)) {
    const activated = await activateDemoProvider(demoCtx, wanted);
    if (activated.ok) {
      provider = wanted;
      out.line(`   ${c.green("✓")} Activated ${wanted} (memory.provider in ${path.join(home, "config.yaml")})`);
    } else {
      out.line(`   ${c.yellow("!")} ${wanted} is installed but cannot be used: ${activated.reason}`);
      out.line("   Continuing with built-in memory (MEMORY.md / USER.md).");
    }
  } else {
    const pkg = wanted === DEMO_PROVIDER ? DEMO_PROVIDER_PACKAGE : "<its package>";
    const [meant] = closestNames(
      wanted,
      providers.map((p) => p.name),
    );
    if (meant) out.line(`   ${wanted} is not installed. Did you mean ${meant}? Run \`hermes-memory demo --provider ${meant}\`.`);
    else
      out.line(
        `   ${wanted} is not installed. Install it with ${await installCommandHint(pkg, { cwd: demoCtx.cwd, env: demoCtx.io.env })}.`,
      );
    out.line("   Running with built-in memory (MEMORY.md / USER.md).");
  }
  out.line("");
  return provider;
}

type OpenDemoSession = (sessionId: string, title: string) => Promise<MemoryManager>;

/** Step 3: replay every session of the sample conversation, one line each. */
async function replayConversation(ctx: CliContext, open: OpenDemoSession): Promise<DemoSessionReport[]> {
  const { out } = ctx;
  const c = out.colors;
  out.line(c.bold("3. Replaying the sample conversation"));
  const sessions: DemoSessionReport[] = [];
  for (const session of DEMO_CONVERSATION.sessions) {
    const report = await replaySession(session, open);
    sessions.push(report);
    out.line(
      `   ${c.green("✓")} ${report.id} "${report.title}": ${report.turns} turns synced (syncAll returned in ${report.syncAllMeanMicros} µs on average), ${report.notes} note${report.notes === 1 ? "" : "s"} saved with the memory tool; session ended and flushed in ${report.endMs} ms`,
    );
  }
  out.line("");
  return sessions;
}

/** What step 4 found: the provider that recalled (`""` for built-in memory), how, and each answer. */
interface DemoRecall {
  active: string;
  mode: DemoReport["recallMode"];
  questions: DemoQuestionReport[];
}

/**
 * Step 4: a new session after the restart asks the questions about session one. Recall is per
 * question through `prefetchAll` when `provider` loaded again, else the built-in system prompt.
 */
async function recallAfterRestart(ctx: CliContext, open: OpenDemoSession, provider: string): Promise<DemoRecall> {
  const { out } = ctx;
  const c = out.colors;
  out.line(c.bold("4. Restart: a new session asks about session one"));
  const recallSession = "demo-session-3";
  const manager = await open(recallSession, "Recall after restart");
  const active = manager.providers.some((p) => p.name === provider) ? provider : "";
  if (provider && !active) out.line(`   ${c.yellow("!")} ${provider} did not load after the restart; recalling from built-in memory.`);
  const mode: DemoReport["recallMode"] = active ? "prefetch" : "system-prompt";
  let questions: DemoQuestionReport[];
  try {
    questions = await askQuestions(DEMO_CONVERSATION, manager, mode, recallSession);
  } finally {
    await manager.shutdownAll();
  }
  if (mode === "system-prompt")
    out.line(c.dim("   Built-in memory has no per-question recall: the agent sees MEMORY.md / USER.md in its system prompt."));
  for (const [i, q] of questions.entries()) {
    const question = DEMO_CONVERSATION.questions[i]!;
    out.line(`   Q: ${q.question}`);
    const how = mode === "prefetch" ? `prefetchAll in ${q.ms} ms` : "system prompt snapshot";
    out.line(`      ${q.found ? c.green(`✓ recalled "${q.fact}"`) : c.red(`✗ not recalled: "${q.fact}"`)} ${c.dim(`(${how})`)}`);
    for (const line of excerpt(q.recalled, question)) out.line(`      ${c.dim("│")} ${line}`);
  }
  return { active, mode, questions };
}

/**
 * `hermes-memory demo`: in a temporary home (or `--hermes-home`), list the providers, activate
 * `sqlite` when installed (else explain how and use built-in memory), replay the shipped sample
 * conversation across two sessions through `openMemory()` and the manager, restart, and show what
 * `prefetchAll` recalls for three questions about session one, with timings. Removes the
 * temporary home unless `--keep`. Exits 2 when a fact is not recalled (the demo's promise broke).
 */
export async function demoCommand(ctx: CliContext, options: DemoOptions): Promise<void> {
  const wanted = isCoreMemoryProvider(options.provider ?? DEMO_PROVIDER) ? "" : (options.provider ?? DEMO_PROVIDER).trim();
  const totalStart = performance.now();
  const temporary = !ctx.hermesHomeFromFlag;
  const home = temporary ? fs.mkdtempSync(path.join(os.tmpdir(), "hermes-memory-demo-")) : ctx.hermesHome;
  const keep = !temporary || options.keep === true;
  const demoCtx: CliContext = { ...ctx, hermesHome: home };
  const { out } = ctx;
  const c = out.colors;
  const warnings: string[] = [];
  const logger = collectingLogger(warnings);
  try {
    createDemoHome(home);
    out.line(c.bold("Hermes memory demo"));
    out.line(
      `Home: ${home}${temporary ? c.dim(keep ? " (temporary, kept: --keep)" : " (temporary; removed at the end, --keep keeps it)") : ""}`,
    );
    out.line("");

    const providers = await showProvidersFound(ctx, home);
    const provider = await chooseDemoProvider(demoCtx, wanted, providers);
    const open: OpenDemoSession = (sessionId, title) =>
      openMemory({
        sessionId,
        sessionTitle: title,
        platform: "cli",
        agentContext: "primary",
        hermesHome: home,
        cwd: ctx.cwd,
        ...(ctx.bundledDir !== undefined ? { bundledDir: ctx.bundledDir } : {}),
        logger,
      });
    const sessions = await replayConversation(ctx, open);
    const { active, mode, questions } = await recallAfterRestart(ctx, open, provider);

    const recalledCount = questions.filter((q) => q.found).length;
    const totalMs = round(performance.now() - totalStart);
    out.line("");
    out.line(
      `${recalledCount}/${questions.length} facts from session one recalled after a restart, with ${active || "built-in memory"}. Total ${(totalMs / 1000).toFixed(2)} s.`,
    );
    if (keep) {
      // Discovery started from --cwd: the commands that look inside must start there too.
      const where = ctx.cwd !== ctx.io.cwd ? ` --cwd ${ctx.cwd}` : "";
      out.line(
        `Home kept at ${home}. Look inside: \`hermes-memory --hermes-home ${home}${where} memory status\`${active ? ` or \`hermes-memory --hermes-home ${home}${where} ${active} stats\`` : ""}.`,
      );
    }
    for (const w of warnings) out.warn(w);
    const report: DemoReport = {
      hermesHome: home,
      kept: keep,
      provider: active,
      providers: providers.map((p) => ({ name: p.name, source: p.source, version: p.version, location: p.dir })),
      sessions,
      recallMode: mode,
      questions,
      recalledCount,
      totalMs,
      warnings,
    };
    out.data(report);
    if (recalledCount < questions.length) {
      // Not a user error: the shipped conversation is fixed, so a miss is a bug (exit 2).
      throw new Error(
        `the demo recalled only ${recalledCount} of ${questions.length} facts from session one${active ? ` with ${active}` : ""}; rerun with --keep and inspect the home`,
      );
    }
  } finally {
    if (!keep) fs.rmSync(home, { recursive: true, force: true });
    if (!keep && !ctx.json) out.line(c.dim(`Removed the temporary home ${home}.`));
  }
}
