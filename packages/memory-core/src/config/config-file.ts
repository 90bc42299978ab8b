import fsp from "node:fs/promises";
import path from "node:path";
import { Document, isMap, isPair, isScalar, isSeq, parseDocument, YAMLMap, type ScalarTag, type Tags } from "yaml";
import { HermesMemoryError, describeError } from "../errors.js";
import { atomicWriteFile, normalizeNewlines, stripBom, withFileLock } from "../fs.js";
import { getHermesHome } from "../profile.js";
import { isValidProviderName } from "../provider.js";
import { normalizeSpillConfig, type SpillConfig } from "../spill.js";
import { isCoreMemoryProvider } from "../trivial-prompt.js";
import { parseIsolationConfig } from "../isolation/isolation-config.js";
import type { IsolationMode } from "../isolation/protocol.js";
import { DEFAULT_MEMORY_CHAR_LIMIT, DEFAULT_USER_CHAR_LIMIT } from "../builtin/memory-store.js";
import { isTruthyFlag } from "./environment.js";
import { notUtf8Message, readUtf8File } from "./text-file.js";

/** File name of the profile configuration inside `$HERMES_HOME`. */
export const CONFIG_FILE_NAME = "config.yaml";

/**
 * The typed view of `$HERMES_HOME/config.yaml` with every default applied. Keys on disk are
 * snake_case (shared with the Python agent); here they are camelCase. `raw` is the whole file as
 * plain data, unknown keys included.
 */
export interface HermesConfig {
  memory: {
    /** `memory.provider`; `""` means built-in only (also for `builtin`, `none`, `default`). */
    provider: string;
    memoryCharLimit: number;
    userCharLimit: number;
    memoryEnabled: boolean;
    userProfileEnabled: boolean;
    /** The `memory.<name>` mapping (a copy; `{}` when absent or not a mapping). */
    providerConfig(name: string): Record<string, unknown>;
    /** `memory.isolation`: provider name → `inline` or `worker` (valid entries only). */
    isolation: Record<string, IsolationMode>;
  };
  compression: { checkpointRequired: boolean };
  hooks: { outputSpill: SpillConfig };
  plugins: { disabled: string[] };
  raw: Record<string, unknown>;
  /**
   * Settings of the known keys that had the wrong type or value and were replaced by their
   * defaults (e.g. `memory.provider: [sqlite]`), one sentence each naming the key, what it held and
   * what is used instead. `openMemory` logs them; the file itself is left as it is.
   */
  warnings: string[];
}

/** Largest config.yaml read (1 MiB): a profile configuration is a few kilobytes. */
export const MAX_CONFIG_BYTES = 1024 * 1024;
/** Most YAML aliases (`*name`) resolved; an alias bomb multiplies a few lines into gigabytes. */
export const MAX_CONFIG_ALIASES = 100;
/** Most mapping keys plus sequence items in the whole file. */
export const MAX_CONFIG_NODES = 10_000;

/**
 * Check the parsed document before anything expands it: key/item count, nesting depth and
 * duplicate keys. Iterative and linear — the `yaml` package's own duplicate-key check is
 * quadratic in the number of keys, so it is turned off at parse time and done here.
 */
function checkDocument(doc: Document, file: string): void {
  let nodes = 0;
  const stack: Array<[unknown, number]> = [[doc.contents, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (!isMap(node) && !isSeq(node)) continue;
    if (depth >= MAX_CONFIG_DEPTH) throw invalidConfig(file, `nests mappings/lists deeper than ${MAX_CONFIG_DEPTH} levels`);
    nodes += node.items.length;
    if (nodes > MAX_CONFIG_NODES) throw invalidConfig(file, `has more than ${MAX_CONFIG_NODES} keys and list items`);
    const seen = new Set<unknown>();
    for (const item of node.items as unknown[]) {
      if (isPair(item)) {
        const key = isScalar(item.key) ? item.key.value : item.key;
        if (isScalar(item.key) && seen.has(key))
          throw invalidConfig(
            file,
            `is not valid YAML: Map keys must be unique (duplicate key ${JSON.stringify(String(key)).slice(0, 80)})`,
          );
        seen.add(key);
        stack.push([item.value, depth + 1]);
      } else {
        stack.push([item, depth + 1]);
      }
    }
  }
}
/** Deepest nesting of mappings and sequences. */
export const MAX_CONFIG_DEPTH = 64;

const FIX_HINT = "Fix the file (or move it aside to start from defaults).";

function invalidConfig(file: string, problem: string, cause?: unknown): HermesMemoryError {
  return new HermesMemoryError({
    code: "INVALID_CONFIG",
    message: `${file} ${problem}. ${FIX_HINT}`,
    ...(cause === undefined ? {} : { cause }),
  });
}

/**
 * Refuse values too big or too deep to be a configuration, after aliases and merge keys are
 * expanded (an alias can put a mapping deeper than it is written); iterative, so depth cannot
 * overflow. Depth counts as in `checkDocument`: the top-level mapping is at 0, so a value at
 * `MAX_CONFIG_DEPTH` is one level too many.
 */
function checkShape(data: unknown, file: string): void {
  let nodes = 0;
  const stack: Array<[unknown, number]> = [[data, 0]];
  while (stack.length > 0) {
    const [value, depth] = stack.pop()!;
    if (typeof value !== "object" || value === null) continue;
    if (depth >= MAX_CONFIG_DEPTH) throw invalidConfig(file, `nests mappings/lists deeper than ${MAX_CONFIG_DEPTH} levels`);
    const children = Array.isArray(value) ? value : Object.values(value as Record<string, unknown>);
    nodes += children.length;
    if (nodes > MAX_CONFIG_NODES) throw invalidConfig(file, `has more than ${MAX_CONFIG_NODES} keys and list items`);
    for (const child of children) stack.push([child, depth + 1]);
  }
}

/** Absolute path of `config.yaml` for a home. */
export function configFilePath(hermesHome: string): string {
  return path.join(path.resolve(hermesHome), CONFIG_FILE_NAME);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function positiveInteger(value: unknown, fallback: number): number {
  const n = typeof value === "string" && /^\s*\d+\s*$/.test(value) ? Number.parseInt(value, 10) : value;
  return typeof n === "number" && Number.isInteger(n) && n > 0 ? n : fallback;
}

function flag(value: unknown, fallback: boolean): boolean {
  if (value === undefined || value === null) return fallback;
  if (typeof value === "string") return isTruthyFlag(value);
  return Boolean(value);
}

/**
 * The schema's scalar tags, each writing a scalar back exactly as it was written in the file
 * (`017`, `+12`, `.5`, `1e3`, `0x1F`, `99999999999999999999999`) while its value is unchanged: the
 * parser reads these as YAML 1.2 numbers and would print them normalised (`17`, `12`, `0.5`,
 * `1e+3`, `0x1f`, `1e+23`), which the Python agent's YAML 1.1 reader reads as other values (`017`
 * is octal 15 there, `1e+3` text). Only values an edit changed are printed anew.
 */
function keepScalarSource(tags: Tags): Tags {
  type Implicit = ScalarTag & { test: RegExp };
  const implicit = tags.filter(
    (tag): tag is Implicit => typeof tag === "object" && "test" in tag && tag.test instanceof RegExp && typeof tag.resolve === "function",
  );
  // The value the parser gave `source` as a plain scalar: the first tag whose pattern matches it.
  const resolvedAs = (source: string): { value: unknown } | null => {
    const tag = implicit.find((t) => t.test.test(source));
    if (!tag) return null;
    try {
      // Some tags (floats) resolve to a Scalar node carrying formatting, others to the value.
      const resolved: unknown = tag.resolve(source, () => {}, {});
      return { value: isScalar(resolved) ? resolved.value : resolved };
    } catch {
      return null;
    }
  };
  return tags.map((tag) => {
    if (typeof tag !== "object" || !("test" in tag) || typeof tag.stringify !== "function") return tag;
    const scalar = tag as ScalarTag;
    const wrapped: ScalarTag = {
      ...scalar,
      stringify(item, ctx, onComment, onChompKeep) {
        const { source, type, value } = item as { source?: unknown; type?: unknown; value?: unknown };
        if (typeof source === "string" && (type === undefined || type === "PLAIN")) {
          const parsed = resolvedAs(source);
          if (parsed !== null && Object.is(parsed.value, value)) return source;
        }
        return scalar.stringify!(item, ctx, onComment, onChompKeep);
      },
    };
    return wrapped;
  });
}

function parseYaml(text: string, file: string): Document {
  if (text.length > MAX_CONFIG_BYTES || Buffer.byteLength(text, "utf8") > MAX_CONFIG_BYTES) {
    throw invalidConfig(file, `is larger than ${MAX_CONFIG_BYTES} bytes`);
  }
  let doc: Document;
  try {
    // Line endings normalised first: the YAML parser accepts CRLF but reads a lone CR as no break.
    // `merge`: YAML 1.1 merge keys (`<<: *base`), which the Python agent's PyYAML applies.
    doc = parseDocument(normalizeNewlines(stripBom(text)), {
      prettyErrors: false,
      keepSourceTokens: false,
      uniqueKeys: false,
      merge: true,
      customTags: keepScalarSource,
    });
  } catch (error) {
    // The parser recurses; hostile nesting can overflow its stack.
    throw invalidConfig(file, `cannot be parsed: ${describeError(error)}`, error);
  }
  if (doc.errors.length > 0) {
    throw invalidConfig(file, `is not valid YAML: ${doc.errors[0]!.message.split("\n")[0]}`);
  }
  checkDocument(doc, file);
  const contents = doc.contents;
  if (contents !== null && !isMap(contents) && !(isScalar(contents) && (contents.value === null || contents.value === undefined))) {
    throw new HermesMemoryError({
      code: "INVALID_CONFIG",
      message: `${file} must contain a YAML mapping at the top level (e.g. "memory:\\n  provider: sqlite"). Fix the file (or move it aside to start from defaults).`,
    });
  }
  return doc;
}

/**
 * Build the typed view from config.yaml text. Pure; used by `readConfig`. Throws `INVALID_CONFIG`
 * for malformed YAML, a non-mapping top level, or a hostile file: more than `MAX_CONFIG_BYTES`,
 * `MAX_CONFIG_ALIASES` aliases, `MAX_CONFIG_NODES` keys/items or `MAX_CONFIG_DEPTH` levels.
 * Wrong-typed values fall back to their defaults.
 */
export function parseConfig(text: string, file = CONFIG_FILE_NAME): HermesConfig {
  const doc = parseYaml(text, file);
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: MAX_CONFIG_ALIASES });
  } catch (error) {
    throw invalidConfig(
      file,
      `uses too many YAML aliases or nests too deeply (${describeError(error)}); at most ${MAX_CONFIG_ALIASES} aliases are resolved`,
      error,
    );
  }
  checkShape(data, file);
  const raw = isRecord(data) ? data : {};
  const warnings: string[] = [];
  /** A key that is set but not as its reader needs: its default applies, and the user hears why. */
  const ignored = (key: string, value: unknown, needs: string, instead: string) => {
    if (value === undefined || value === null) return;
    const shown = JSON.stringify(value) ?? String(value);
    warnings.push(`${file}: ${key} ${needs} (got ${shown.length > 80 ? `${shown.slice(0, 80)}…` : shown}); ${instead}.`);
  };
  const section = (key: string): Record<string, unknown> => {
    if (isRecord(raw[key])) return raw[key] as Record<string, unknown>;
    ignored(key, raw[key], "must be a mapping of settings", "its settings take their defaults");
    return {};
  };
  const memory = section("memory");
  const compression = section("compression");
  const hooks = section("hooks");
  const plugins = section("plugins");
  if (typeof memory.provider !== "string") ignored("memory.provider", memory.provider, "must be a provider name", "built-in memory only");
  const providerValue = typeof memory.provider === "string" ? memory.provider.trim() : "";
  if (!Array.isArray(plugins.disabled))
    ignored("plugins.disabled", plugins.disabled, "must be a list of plugin names", "no plugin is disabled");
  const disabled = Array.isArray(plugins.disabled)
    ? plugins.disabled.filter((v): v is string => typeof v === "string").map((v) => v.trim())
    : [];
  const limit = (key: string, fallback: number): number => {
    const value = positiveInteger(memory[key], 0);
    if (value > 0) return value;
    ignored(`memory.${key}`, memory[key], "must be a whole number of characters above 0", `${fallback} is used`);
    return fallback;
  };
  return {
    memory: {
      provider: isCoreMemoryProvider(providerValue) ? "" : providerValue,
      memoryCharLimit: limit("memory_char_limit", DEFAULT_MEMORY_CHAR_LIMIT),
      userCharLimit: limit("user_char_limit", DEFAULT_USER_CHAR_LIMIT),
      memoryEnabled: flag(memory.memory_enabled, true),
      userProfileEnabled: flag(memory.user_profile_enabled, true),
      providerConfig(name: string): Record<string, unknown> {
        const section = memory[name];
        return isRecord(section) ? structuredClone(section) : {};
      },
      isolation: parseIsolationConfig(memory.isolation, ignored),
    },
    compression: { checkpointRequired: flag(compression.checkpoint_required, false) },
    hooks: { outputSpill: normalizeSpillConfig(hooks.output_spill) },
    plugins: { disabled },
    raw,
    warnings,
  };
}

/**
 * Read `$HERMES_HOME/config.yaml` (default: the active profile) into a typed object with
 * defaults; a missing file gives all defaults. The only reader of config.yaml in this project:
 * providers get their section through `config.memory.providerConfig(name)`. Throws
 * `INVALID_CONFIG` when the file is not valid YAML, not UTF-8, or cannot be read.
 */
export async function readConfig(hermesHome?: string): Promise<HermesConfig> {
  const file = configFilePath(hermesHome ?? getHermesHome());
  let text = "";
  try {
    // Refuse a huge file before reading it into memory.
    const size = (await fsp.stat(file)).size;
    if (size > MAX_CONFIG_BYTES)
      throw invalidConfig(file, `is ${size} bytes, larger than the ${MAX_CONFIG_BYTES}-byte limit for a configuration`);
    text = await readConfigText(file);
  } catch (error) {
    if (HermesMemoryError.isInstance(error)) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "ENOENT" && code !== "ENOTDIR") {
      const fix = code === "EINVAL" ? "Replace it with a regular YAML file" : "Check its permissions";
      throw new HermesMemoryError({
        code: "INVALID_CONFIG",
        message: `Cannot read ${file}: ${describeError(error)}. ${fix}.`,
        cause: error,
      });
    }
  }
  return parseConfig(text, file);
}

/** config.yaml as text ("" when missing); INVALID_CONFIG when it is not UTF-8; other errors as thrown. */
async function readConfigText(file: string): Promise<string> {
  const content = await readUtf8File(file, MAX_CONFIG_BYTES);
  if (content.kind === "missing") return "";
  if (content.kind === "not-utf8") {
    throw new HermesMemoryError({
      code: "INVALID_CONFIG",
      message: `${notUtf8Message(file, content.offset)}. Nothing was read or written.`,
    });
  }
  return content.text;
}

/**
 * Edit config.yaml through the `yaml` Document API, so comments, key order and keys this project
 * does not know survive. Runs under a lock file and writes atomically; a missing file is created.
 * Refuses (INVALID_CONFIG) to touch a file that is not valid YAML, not UTF-8 or unreadable
 * rather than overwrite it; a failed write is STORAGE_FAILED (the file is left unchanged).
 * `edit` must be synchronous and only change `doc`.
 */
export async function updateConfig(hermesHome: string, edit: (doc: Document) => void): Promise<void> {
  const file = configFilePath(hermesHome);
  try {
    await fsp.mkdir(path.dirname(file), { recursive: true });
  } catch (error) {
    throw new HermesMemoryError({
      code: "STORAGE_FAILED",
      message: `Cannot create ${path.dirname(file)} for ${CONFIG_FILE_NAME}: ${describeError(error)}. Check that HERMES_HOME is a writable directory, then retry.`,
      cause: error,
    });
  }
  await withFileLock(file, async () => {
    let text: string;
    try {
      text = await readConfigText(file);
    } catch (error) {
      if (HermesMemoryError.isInstance(error)) throw error;
      throw new HermesMemoryError({
        code: "INVALID_CONFIG",
        message: `Cannot read ${file}: ${describeError(error)}. It must be a readable regular file (or absent); nothing was written.`,
        cause: error,
      });
    }
    const doc = parseYaml(text, file);
    edit(doc);
    try {
      await atomicWriteFile(file, doc.toString());
    } catch (error) {
      throw new HermesMemoryError({
        code: "STORAGE_FAILED",
        message: `Cannot write ${file}: ${describeError(error)}. The file was left unchanged; check free disk space and that ${path.dirname(file)} is writable, then retry.`,
        cause: error,
      });
    }
  });
}

/**
 * Set `path` (e.g. `["memory", "sqlite", "path"]`) in a document, creating mappings on the way.
 * An empty (`null`) intermediate becomes a mapping; any other non-mapping value is an error,
 * because replacing it would silently drop what the user wrote.
 */
export function setDocumentValue(doc: Document, keyPath: string[], value: unknown): void {
  if (keyPath.length === 0)
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: 'setConfigValue needs a non-empty key path, e.g. ["memory", "provider"].',
    });
  if (doc.contents === null || (isScalar(doc.contents) && doc.contents.value == null)) doc.contents = new YAMLMap() as never;
  for (let i = 1; i < keyPath.length; i++) {
    const prefix = keyPath.slice(0, i);
    const node = doc.getIn(prefix, true);
    if (node === undefined || (isScalar(node) && node.value == null)) {
      doc.setIn(prefix, new YAMLMap());
    } else if (!isMap(node)) {
      throw new HermesMemoryError({
        code: "INVALID_CONFIG",
        message: `Cannot set ${keyPath.join(".")} in config.yaml: ${prefix.join(".")} holds a value that is not a mapping. Edit config.yaml and make ${prefix.join(".")} a mapping (or remove it).`,
      });
    }
  }
  doc.setIn(keyPath, value);
}

/** Set one value in config.yaml (comments and other keys kept). See `updateConfig`. */
export async function setConfigValue(hermesHome: string, keyPath: string[], value: unknown): Promise<void> {
  await updateConfig(hermesHome, (doc) => setDocumentValue(doc, keyPath, value));
}

/**
 * Select the active provider: writes `memory.provider`. `""` (or `builtin`, `none`, `default`)
 * selects built-in memory only. Does not check that the provider is installed; throws
 * `INVALID_ARGUMENT` for a name no provider can have.
 */
export async function setActiveProvider(hermesHome: string, name: string): Promise<void> {
  const value = isCoreMemoryProvider(name) ? "" : name.trim();
  if (value !== "" && !isValidProviderName(value)) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `'${name}' is not a valid memory provider name (lower-case letters, digits, '.', '_', '-'). Run \`hermes-memory plugins list\` to see installed providers, or pass "" for built-in memory only.`,
    });
  }
  await setConfigValue(hermesHome, ["memory", "provider"], value);
}
