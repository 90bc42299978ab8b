import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { stripVTControlCharacters } from "node:util";

/** The built binary under test (`pnpm test` builds before testing). */
export const BIN = fileURLToPath(new URL("../../dist/bin.js", import.meta.url));
/** This package's folder: its package.json lists @hermes/memory-sqlite (dev dependency). */
export const CLI_DIR = fileURLToPath(new URL("../..", import.meta.url));
/** Core as the CLI resolves it, so fixture providers extend the very class the CLI checks. */
export const CORE_URL = pathToFileURL(fs.realpathSync(path.join(CLI_DIR, "node_modules/@hermes/memory-core/dist/index.js"))).href;

/** A temp folder (real path) removed by `cleanup`. */
export function tempDir(prefix: string): { dir: string; cleanup: () => void } {
  const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** Write files (relative path → content; objects become JSON). */
export function writeFiles(root: string, files: Record<string, string | object>): void {
  for (const [relative, content] of Object.entries(files)) {
    const file = path.join(root, relative);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, typeof content === "string" ? content : JSON.stringify(content, null, 2));
  }
}

/** Environment for the child: no inherited HERMES_HOME/colour settings, unless given. */
export function childEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const key of [
    "HERMES_HOME",
    "NO_COLOR",
    "FORCE_COLOR",
    "HERMES_ENABLE_PROJECT_PLUGINS",
    "HERMES_MEMORY_DEBUG",
    "HERMES_MEMORY_BUNDLED_DIR",
  ])
    delete env[key];
  for (const [k, v] of Object.entries(extra)) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return env;
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run `node dist/bin.js …args` to completion with stdin closed (or fed `input`). */
export function runCli(args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv; input?: string }): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd,
      env: options.env ?? childEnv(),
      stdio: ["pipe", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(options.input ?? "");
  });
}

/** A running CLI driven like a user at a prompt: wait for text, then type. */
export interface InteractiveCli {
  /** Resolves once the (ANSI-stripped) stdout since the last `waitFor` contains `text`. */
  waitFor(text: string | RegExp, timeoutMs?: number): Promise<void>;
  /** Type keys (`\r` is Enter, `j`/`k` move a select down/up). */
  type(keys: string): void;
  /** Close stdin (like Ctrl-D / end of a pipe). */
  closeInput(): void;
  /** Wait for exit. */
  done(): Promise<RunResult>;
  /** Everything printed so far, ANSI-stripped. */
  output(): string;
  /** Everything printed so far, as written (escape sequences included). */
  rawOutput(): string;
}

/** True when util-linux `script` is available to run the CLI on a real pseudo-terminal. */
export const HAS_SCRIPT = ["/usr/bin/script", "/bin/script"].some((p) => fs.existsSync(p));

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, "'\\''")}'`;
}

/**
 * Start `node dist/bin.js …args` with a stdin pipe for interactive prompts. With `terminal`, the
 * CLI runs on a pseudo-terminal (`script -qefc`, 120 columns) so prompts use raw mode as for a user.
 */
export function startCli(args: string[], options: { cwd: string; env?: NodeJS.ProcessEnv; terminal?: boolean }): InteractiveCli {
  const command = options.terminal
    ? ([
        "script",
        ["-qefc", `stty cols 120 rows 40; exec ${[process.execPath, BIN, ...args].map(shellQuote).join(" ")}`, "/dev/null"],
      ] as const)
    : ([process.execPath, [BIN, ...args]] as const);
  const child = spawn(command[0], [...command[1]], { cwd: options.cwd, env: options.env ?? childEnv(), stdio: ["pipe", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  let consumed = 0;
  const listeners = new Set<() => void>();
  child.stdout.on("data", (d: Buffer) => {
    stdout += d.toString();
    for (const l of [...listeners]) l();
  });
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<RunResult>((resolve) => child.on("close", (code) => resolve({ code: code ?? -1, stdout, stderr })));
  return {
    waitFor(text, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          // Offsets are in the ANSI-stripped text; what follows a match stays for the next wait.
          const fresh = stripVTControlCharacters(stdout).slice(consumed);
          const match =
            typeof text === "string"
              ? fresh.includes(text)
                ? { index: fresh.indexOf(text), length: text.length }
                : null
              : fresh.match(text);
          if (match) {
            listeners.delete(check);
            clearTimeout(timer);
            consumed +=
              (match.index ?? 0) +
              ("length" in match && typeof match.length === "number" && !Array.isArray(match)
                ? match.length
                : (match as RegExpMatchArray)[0].length);
            resolve();
          }
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(
            new Error(`timed out waiting for ${String(text)}; output so far:\n${stripVTControlCharacters(stdout)}\nstderr:\n${stderr}`),
          );
        }, timeoutMs);
        listeners.add(check);
        void exited.then(() => {
          if (listeners.has(check)) {
            listeners.delete(check);
            clearTimeout(timer);
            reject(new Error(`exited while waiting for ${String(text)}; output:\n${stripVTControlCharacters(stdout)}\nstderr:\n${stderr}`));
          }
        });
        check();
      });
    },
    type(keys) {
      child.stdin.write(keys);
    },
    closeInput() {
      child.stdin.end();
    },
    done: () => exited,
    output: () => stripVTControlCharacters(stdout),
    rawOutput: () => stdout,
  };
}

export interface FixtureProvider {
  /** Setup fields returned by getConfigSchema(). */
  schema?: object[];
  available?: boolean;
  reason?: string;
  /** Source of a cli.js placed beside the entry (exports registerCli). */
  cli?: string;
  version?: string;
  description?: string;
  /** Also implement SearchableMemory with a fixed stats() result. */
  searchable?: boolean;
  /** Extra class members (source). */
  body?: string;
}

/** Source of an ESM provider module extending core's MemoryProvider. */
export function providerModule(name: string, options: FixtureProvider = {}): string {
  const searchable = options.searchable
    ? `
  remember() { return "1"; }
  search() { return []; }
  get() { return null; }
  forget() { return false; }
  stats() { return { items: 7, byKind: { turn: 5, fact: 2, checkpoint: 0 }, sessions: 2, location: this.home + "/${name}.data" }; }
  flush() {}`
    : "";
  return `import { MemoryProvider } from ${JSON.stringify(CORE_URL)};
class FixtureProvider extends MemoryProvider {
  name = ${JSON.stringify(name)};
  home = "";
  isAvailable() { return ${options.available === false ? "false" : "true"}; }
  unavailableReason() { return ${JSON.stringify(options.reason ?? "")}; }
  initialize(_s, ctx) { this.home = ctx.hermesHome; }
  getToolSchemas() { return []; }
  getConfigSchema() { return ${JSON.stringify(options.schema ?? [])}; }${searchable}
  ${options.body ?? ""}
}
export function register(ctx) { ctx.registerMemoryProvider(new FixtureProvider()); }
`;
}

/** A user directory provider: `$HERMES_HOME/plugins/<name>/` with plugin.yaml and index.js. */
export function writeUserProvider(home: string, name: string, options: FixtureProvider = {}): string {
  const dir = path.join(home, "plugins", name);
  writeFiles(dir, {
    "plugin.yaml": `name: ${name}\nversion: ${options.version ?? "1.0.0"}\ndescription: ${options.description ?? `Fixture provider ${name}`}\nhooks: [sync_turn]\n`,
    "index.js": providerModule(name, options),
    ...(options.cli ? { "cli.js": options.cli } : {}),
  });
  return dir;
}

/**
 * A package provider installed in `root`: `root/package.json` depends on `pkg`, and
 * `root/node_modules/<pkg>/` declares `hermesMemoryProvider`.
 */
export function writePackageProvider(root: string, pkg: string, name: string, options: FixtureProvider = {}): string {
  const manifestPath = path.join(root, "package.json");
  const manifest: { dependencies?: Record<string, string>; [key: string]: unknown } = fs.existsSync(manifestPath)
    ? JSON.parse(fs.readFileSync(manifestPath, "utf8"))
    : { name: "fixture-project", private: true };
  manifest.dependencies = { ...(manifest.dependencies ?? {}), [pkg]: options.version ?? "1.0.0" };
  fs.writeFileSync(manifestPath, JSON.stringify(manifest, null, 2));
  const dir = path.join(root, "node_modules", pkg);
  writeFiles(dir, {
    "package.json": {
      name: pkg,
      version: options.version ?? "1.0.0",
      type: "module",
      main: "./index.js",
      hermesMemoryProvider: {
        name,
        ...(options.cli ? { cli: "./cli.js" } : {}),
        description: options.description ?? `Package provider ${name}`,
      },
    },
    "index.js": providerModule(name, options),
    ...(options.cli ? { "cli.js": options.cli } : {}),
  });
  return dir;
}

/** Parse stdout as the one JSON document a `--json` command prints. */
export function parseJson<T = any>(result: RunResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch (error) {
    throw new Error(`stdout is not JSON (${String(error)}):\n${result.stdout}\nstderr:\n${result.stderr}`);
  }
}

/**
 * A project folder under `root` depending on one of this repository's reference providers
 * (`providers/<folder>`), linked into its node_modules; the CLI's own package.json lists only the
 * SQLite provider.
 */
export function projectWithProvider(root: string, pkg: string, folder: string): string {
  const project = path.join(root, "project");
  writeFiles(project, { "package.json": { name: "host", private: true, dependencies: { [pkg]: "*" } } });
  fs.mkdirSync(path.dirname(path.join(project, "node_modules", pkg)), { recursive: true });
  fs.symlinkSync(path.resolve(CLI_DIR, "../../providers", folder), path.join(project, "node_modules", pkg), "dir");
  return project;
}

/**
 * What a terminal shows after `raw` was written to it: the lines (trailing blanks dropped) and
 * whether the cursor is visible. Understands what progress output uses: carriage return, newline,
 * erase line (`ESC[2K`), hide and show cursor (`ESC[?25l` / `ESC[?25h`); other escape sequences
 * (colours) are dropped.
 */
export function terminalScreen(raw: string): { lines: string[]; cursorVisible: boolean } {
  const lines: string[][] = [[]];
  let row = 0;
  let col = 0;
  let cursorVisible = true;
  for (let i = 0; i < raw.length;) {
    const escape = raw[i] === "\u001b" ? /^\[(\??)([0-9;]*)([A-Za-z])/.exec(raw.slice(i + 1, i + 16)) : null;
    if (escape) {
      const [whole, private_, params, command] = escape;
      if (private_ === "?" && params === "25") cursorVisible = command === "h";
      else if (command === "K" && params === "2") lines[row] = [];
      i += 1 + whole.length;
      continue;
    }
    const char = String.fromCodePoint(raw.codePointAt(i)!);
    i += char.length;
    if (char === "\r") col = 0;
    else if (char === "\n") {
      row++;
      col = 0;
      lines[row] ??= [];
    } else {
      const line = lines[row]!;
      while (line.length < col) line.push(" ");
      line[col++] = char;
    }
  }
  return { lines: lines.map((l) => l.join("").trimEnd()), cursorVisible };
}
