import fsp from "node:fs/promises";
import path from "node:path";
import { HermesMemoryError, describeError } from "../errors.js";
import { atomicWriteFile, normalizeNewlines, stripBom, withFileLock } from "../fs.js";
import { notUtf8Message, readTextLenient, readUtf8File } from "./text-file.js";

/** File name of the secrets file inside `$HERMES_HOME`. */
export const ENV_FILE_NAME = ".env";
/** Names `writeEnvValues` accepts. */
export const ENV_NAME_PATTERN = /^[A-Z_][A-Z0-9_]*$/;

/**
 * Names a provider setup may never write: they change how processes start, which libraries load,
 * or which profile is active. A memory provider's secret has no business in them.
 */
export const DENIED_ENV_NAMES: ReadonlySet<string> = new Set([
  "PATH",
  "HOME",
  "USER",
  "SHELL",
  "IFS",
  "ENV",
  "BASH_ENV",
  "PS4",
  "PROMPT_COMMAND",
  "TMPDIR",
  "NODE_OPTIONS",
  "NODE_PATH",
  "NODE_EXTRA_CA_CERTS",
  "NODE_TLS_REJECT_UNAUTHORIZED",
  "LD_PRELOAD",
  "LD_LIBRARY_PATH",
  "LD_AUDIT",
  "DYLD_INSERT_LIBRARIES",
  "DYLD_LIBRARY_PATH",
  "DYLD_FRAMEWORK_PATH",
  "PYTHONPATH",
  "PYTHONHOME",
  "PYTHONSTARTUP",
  "PERL5LIB",
  "RUBYLIB",
  "SSL_CERT_FILE",
  "SSL_CERT_DIR",
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "ALL_PROXY",
  "NO_PROXY",
  "HERMES_HOME",
  "HERMES_ENABLE_PROJECT_PLUGINS",
]);

/**
 * Largest `.env` read or rewritten (1 MiB). A secrets file of KEY=value lines is a few KB; a larger
 * one is refused (`readEnvFile` and `writeEnvValues` fail with STORAGE_FAILED, `getEnv` sees no
 * values from it) instead of being read into memory.
 */
export const MAX_ENV_FILE_BYTES = 1024 * 1024;

/** Absolute path of `.env` for a home. */
export function envFilePath(hermesHome: string): string {
  return path.join(path.resolve(hermesHome), ENV_FILE_NAME);
}

/** Why `name` may not be written to `.env`, or `null` when it may. */
export function envNameError(name: string): string | null {
  if (!ENV_NAME_PATTERN.test(name))
    return `'${name}' is not a valid variable name (use upper-case letters, digits and '_', not starting with a digit)`;
  if (DENIED_ENV_NAMES.has(name)) return `'${name}' controls how programs start and may not be set from memory provider setup`;
  return null;
}

const LINE_PATTERN = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/;

/**
 * A value written by `formatValue` as shell words: `'…'` segments (literal), `"…"` segments
 * (backslash escapes `\\ \" \$ \`` as in the shell, and `\n \r \t` as python-dotenv reads them) and `\'` between them, adjacent, up to whitespace; then
 * nothing or a `#` comment. `null` when `value` is not of that shape; else the value and the
 * comment (`""` when none).
 */
function parseShellWord(value: string): { word: string; comment: string } | null {
  let out = "";
  let i = 0;
  while (i < value.length && !/\s/.test(value[i]!)) {
    const c = value[i]!;
    if (c === "'") {
      const end = value.indexOf("'", i + 1);
      if (end < 0) return null;
      out += value.slice(i + 1, end);
      i = end + 1;
    } else if (c === '"') {
      let j = i + 1;
      for (;;) {
        if (j >= value.length) return null;
        const d = value[j]!;
        if (d === '"') break;
        const next = value[j + 1];
        if (d === "\\" && next !== undefined && '\\"$`nrt'.includes(next)) {
          out += ({ n: "\n", r: "\r", t: "\t" } as Record<string, string>)[next] ?? next;
          j += 2;
        } else {
          out += d;
          j += 1;
        }
      }
      i = j + 1;
    } else if (c === "\\" && value[i + 1] === "'") {
      out += "'";
      i += 2;
    } else {
      return null;
    }
  }
  const rest = value.slice(i).trim();
  return rest === "" || rest.startsWith("#") ? { word: out, comment: rest } : null;
}

function unquote(raw: string): string {
  const value = raw.trim();
  // Quoted forms, including the 'a'\''b' that `formatEnvValue` writes and a trailing comment.
  if (value.startsWith("'") || value.startsWith('"')) {
    const word = parseShellWord(value);
    if (word !== null) return word.word;
  }
  if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) {
    return value.slice(1, -1).replace(/\\(["\\nrt$`])/g, (_m, c: string) => ({ n: "\n", r: "\r", t: "\t" })[c] ?? c);
  }
  if (value.length >= 2 && value.startsWith("'") && value.endsWith("'")) return value.slice(1, -1);
  // An unquoted value ends at " #" (inline comment), as in python-dotenv.
  const hash = value.search(/\s#/);
  return (hash >= 0 ? value.slice(0, hash) : value).trim();
}

/** The `#` comment after a value (`"# note"`), or `""`; kept when setup rewrites the value. */
function trailingComment(raw: string): string {
  const value = raw.trim();
  if (value.startsWith("'") || value.startsWith('"')) return parseShellWord(value)?.comment ?? "";
  const hash = value.search(/\s#/);
  return hash >= 0 ? value.slice(hash).trim() : "";
}

/** Index just past the quote that closes `line[from - 1]`'s quote `q` (a `"` honours backslash escapes), or -1. */
function closingQuote(line: string, q: string, from: number): number {
  for (let i = from; i < line.length; i++) {
    if (q === '"' && line[i] === "\\") i++;
    else if (line[i] === q) return i + 1;
  }
  return -1;
}

/** One assignment of a `.env` file: lines `start`..`end` (inclusive) and its raw value text. */
interface EnvAssignment {
  start: number;
  end: number;
  name: string;
  raw: string;
}

/**
 * The assignments of a `.env` file, in order. A quoted value whose quote does not close on its
 * line continues on the following lines up to the closing quote, as python-dotenv reads it (PEM
 * keys, JSON), when that quote ends its line (a `#` comment may follow); otherwise the value is
 * that one line.
 */
function scanEnv(lines: readonly string[]): EnvAssignment[] {
  const out: EnvAssignment[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^\s*(#|$)/.test(line)) continue;
    const match = LINE_PATTERN.exec(line);
    if (!match) continue;
    const raw = match[2]!;
    const q = raw[0];
    let end = i;
    if ((q === "'" || q === '"') && closingQuote(raw, q, 1) < 0) {
      for (let j = i + 1; j < lines.length; j++) {
        const close = closingQuote(lines[j]!, q, 0);
        if (close < 0) continue;
        // Only a clean close (nothing but a comment after it) makes a multi-line value; otherwise
        // the first line is read alone, so a stray quote never swallows the lines below it.
        if (/^\s*(#.*)?$/.test(lines[j]!.slice(close))) end = j;
        break;
      }
    }
    out.push({ start: i, end, name: match[1]!, raw: end === i ? raw : [raw, ...lines.slice(i + 1, end + 1)].join("\n") });
    i = end;
  }
  return out;
}

/**
 * Parse `.env` text: `KEY=value`, optional `export`, quotes (a quoted value may span lines, as in
 * python-dotenv), `#` comments. Later lines win.
 */
export function parseEnv(text: string): Record<string, string> {
  const values: Record<string, string> = {};
  for (const { name, raw } of scanEnv(normalizeNewlines(stripBom(text)).split("\n"))) values[name] = unquote(raw);
  return values;
}

/**
 * Read `$HERMES_HOME/.env` (`{}` when missing). The only reader of .env in this project; it does
 * not touch `process.env` — callers decide what to do with the values.
 */
export async function readEnvFile(hermesHome: string): Promise<Record<string, string>> {
  const file = envFilePath(hermesHome);
  try {
    // Never blocks: a FIFO in place of .env is refused, not waited on.
    const text = await readTextLenient(file, MAX_ENV_FILE_BYTES);
    if (text !== "" || (await fsp.stat(hermesHome).catch(() => null))?.isFile() !== true) return parseEnv(text);
    throw Object.assign(new Error(`ENOTDIR: not a directory, open '${file}'`), { code: "ENOTDIR" });
  } catch (error) {
    let code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT") return {};
    if (code === "EINVAL" && (await fsp.stat(file).catch(() => null))?.isDirectory()) code = "EISDIR";
    // Say what is actually wrong: a home that is a file, or a .env that is a directory, is no permission problem.
    const remedy =
      code === "ENOTDIR"
        ? `${hermesHome} is not a directory: point HERMES_HOME (or --hermes-home) at the Hermes home directory`
        : code === "EISDIR"
          ? `${file} is a directory: move it away; secrets live in a file named .env`
          : code === "EINVAL"
            ? "Replace it with a regular file of KEY=value lines"
            : "Check its permissions (it should be readable by you only, mode 0600)";
    throw new HermesMemoryError({
      code: "STORAGE_FAILED",
      message: `Cannot read ${file}: ${describeError(error)}. ${remedy}.`,
      cause: error,
    });
  }
}

/**
 * Quote a value so that both `set -a; . ./.env` in a POSIX shell and `parseEnv` read it back
 * byte for byte (nothing expands: no `$`, backtick or `$(…)` substitution):
 * - plain characters only: bare;
 * - no `'`: single quotes, literal in the shell;
 * - a `'` but no `$`, backtick or backslash: double quotes with `"` escaped, which python-dotenv
 *   also reads exactly;
 * - otherwise: single-quoted runs joined by `\'` (`'it'\''s $HOME'`).
 */
export function formatEnvValue(value: string): string {
  if (value === "" || /^[A-Za-z0-9_./:@+,=-]+$/.test(value)) return value;
  if (!value.includes("'")) return `'${value}'`;
  if (!/[$`\\]/.test(value)) return `"${value.replace(/"/g, '\\"')}"`;
  return `'${value.replace(/'/g, "'\\''")}'`;
}

/**
 * Set variables in `$HERMES_HOME/.env`: existing lines are updated in place, new ones appended,
 * comments and other lines kept. CR/LF are stripped from values (a value can never inject another
 * line). Names must match `^[A-Z_][A-Z0-9_]*$` and not be on `DENIED_ENV_NAMES`; if any name is
 * refused, nothing is written (`INVALID_ENV_NAME`). The file is written atomically with mode 0600.
 * A multi-line quoted value is replaced whole; a `# comment` after a replaced value is kept. A file
 * that is not UTF-8 is refused (`INVALID_CONFIG`) rather than rewritten lossily; read and write
 * errors are `STORAGE_FAILED`.
 */
export async function writeEnvValues(hermesHome: string, values: Record<string, string>): Promise<void> {
  const entries = Object.entries(values);
  const refused = entries.map(([name]) => envNameError(name)).filter((e): e is string => e !== null);
  if (refused.length > 0) {
    throw new HermesMemoryError({
      code: "INVALID_ENV_NAME",
      message: `Refusing to write ${envFilePath(hermesHome)}: ${refused.join("; ")}. Choose another variable name (for a provider, set envVar in its config schema); nothing was written.`,
    });
  }
  if (entries.length === 0) return;
  const file = envFilePath(hermesHome);
  const storageFailed = (what: string, error: unknown) =>
    new HermesMemoryError({
      code: "STORAGE_FAILED",
      message: `${what} ${file}: ${describeError(error)}. Nothing was written; ${file} must be a readable regular file (or absent) in a writable directory with free space.`,
      cause: error,
    });
  try {
    await fsp.mkdir(path.dirname(file), { recursive: true });
  } catch (error) {
    throw storageFailed("Cannot create the directory of", error);
  }
  await withFileLock(file, async () => {
    let content: Awaited<ReturnType<typeof readUtf8File>>;
    try {
      content = await readUtf8File(file, MAX_ENV_FILE_BYTES);
    } catch (error) {
      throw storageFailed("Cannot read", error);
    }
    if (content.kind === "not-utf8") {
      throw new HermesMemoryError({
        code: "INVALID_CONFIG",
        message: `Refusing to rewrite ${ENV_FILE_NAME}: ${notUtf8Message(file, content.offset)}. Nothing was written.`,
      });
    }
    const text = content.kind === "text" ? content.text : "";
    const lines = text === "" ? [] : normalizeNewlines(stripBom(text)).split("\n");
    if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
    const pending = new Map(entries.map(([name, value]) => [name, String(value).replace(/[\r\n]/g, "")]));
    const written = new Set<string>();
    // From the end, so replacing a multi-line value by one line leaves earlier indices valid.
    for (const { start, end, name, raw } of scanEnv(lines).reverse()) {
      if (!pending.has(name)) continue;
      const exported = /^\s*export\s/.test(lines[start]!) ? "export " : "";
      const comment = trailingComment(raw);
      lines.splice(start, end - start + 1, `${exported}${name}=${formatEnvValue(pending.get(name)!)}${comment ? ` ${comment}` : ""}`);
      written.add(name);
    }
    for (const [name, value] of pending) if (!written.has(name)) lines.push(`${name}=${formatEnvValue(value)}`);
    try {
      await atomicWriteFile(file, lines.join("\n") + "\n", { mode: 0o600 });
    } catch (error) {
      throw storageFailed("Cannot write", error);
    }
  });
}
