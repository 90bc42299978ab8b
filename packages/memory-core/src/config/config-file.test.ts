import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "../errors.js";
import { runWithProfile } from "../profile.js";
import { makeTempDir } from "../test-support/temp-tree.js";
import { MAX_CONFIG_DEPTH, parseConfig, readConfig, setActiveProvider, setConfigValue, updateConfig } from "./config-file.js";

let tmp: ReturnType<typeof makeTempDir>;
let home: string;
beforeEach(() => {
  tmp = makeTempDir("hermes-config-");
  home = tmp.dir;
});
afterEach(() => tmp.cleanup());
const file = () => path.join(home, "config.yaml");

describe("readConfig", () => {
  it("gives every default when config.yaml is missing", async () => {
    const config = await readConfig(home);
    expect(config.memory).toMatchObject({
      provider: "",
      memoryCharLimit: 2200,
      userCharLimit: 1375,
      memoryEnabled: true,
      userProfileEnabled: true,
    });
    expect(config.compression.checkpointRequired).toBe(false);
    expect(config.hooks.outputSpill).toMatchObject({ enabled: true, maxChars: 10000, previewHead: 500, previewTail: 500, directory: null });
    expect(config.plugins.disabled).toEqual([]);
    expect(config.memory.providerConfig("sqlite")).toEqual({});
    expect(config.raw).toEqual({});
  });

  it("reads the snake_case keys shared with the Python agent", async () => {
    fs.writeFileSync(
      file(),
      `\uFEFF# my settings
memory:
  provider: sqlite
  memory_char_limit: 3000
  user_char_limit: "1500"
  memory_enabled: false
  sqlite:
    path: /data/mem.db
    limit: 5
compression:
  checkpoint_required: true
hooks:
  output_spill:
    max_chars: 20000
    preview_head: -1
plugins:
  disabled: [foo, " bar ", 3]
other_tool:
  keep: me
`,
    );
    const config = await readConfig(home);
    expect(config.memory).toMatchObject({
      provider: "sqlite",
      memoryCharLimit: 3000,
      userCharLimit: 1500,
      memoryEnabled: false,
      userProfileEnabled: true,
    });
    expect(config.memory.providerConfig("sqlite")).toEqual({ path: "/data/mem.db", limit: 5 });
    expect(config.compression.checkpointRequired).toBe(true);
    expect(config.hooks.outputSpill).toMatchObject({ maxChars: 20000, previewHead: 500 });
    expect(config.plugins.disabled).toEqual(["foo", "bar"]);
    expect(config.raw.other_tool).toEqual({ keep: "me" });
  });

  it("providerConfig returns a copy", async () => {
    const config = parseConfig("memory:\n  vector:\n    nested: {a: 1}\n");
    config.memory.providerConfig("vector").nested = "changed";
    expect(config.memory.providerConfig("vector")).toEqual({ nested: { a: 1 } });
  });

  it.each(["builtin", "none", "default", "Built-In", "  "])("treats memory.provider %j as built-in only", (value) => {
    expect(parseConfig(`memory:\n  provider: ${JSON.stringify(value)}\n`).memory.provider).toBe("");
  });

  it("falls back to defaults for wrong types, saying which in warnings", () => {
    const config = parseConfig(
      "memory:\n  provider: 5\n  memory_char_limit: -3\n  user_char_limit: many\nplugins:\n  disabled: nope\ncompression: yes\n",
    );
    expect(config.memory).toMatchObject({ provider: "", memoryCharLimit: 2200, userCharLimit: 1375 });
    expect(config.plugins.disabled).toEqual([]);
    expect(config.compression.checkpointRequired).toBe(false);
    expect(config.warnings).toEqual([
      'config.yaml: compression must be a mapping of settings (got "yes"); its settings take their defaults.',
      "config.yaml: memory.provider must be a provider name (got 5); built-in memory only.",
      'config.yaml: plugins.disabled must be a list of plugin names (got "nope"); no plugin is disabled.',
      "config.yaml: memory.memory_char_limit must be a whole number of characters above 0 (got -3); 2200 is used.",
      'config.yaml: memory.user_char_limit must be a whole number of characters above 0 (got "many"); 1375 is used.',
    ]);
    expect(parseConfig("memory:\n  provider: [sqlite]\n").warnings).toEqual([
      'config.yaml: memory.provider must be a provider name (got ["sqlite"]); built-in memory only.',
    ]);
    expect(parseConfig("memory: sqlite\n").warnings).toEqual([
      'config.yaml: memory must be a mapping of settings (got "sqlite"); its settings take their defaults.',
    ]);
    // Absent or empty settings, and right ones, warn about nothing.
    expect(parseConfig("").warnings).toEqual([]);
    expect(parseConfig("memory:\n  provider:\n  memory_char_limit: '3000'\nplugins:\n  disabled: [a]\n").warnings).toEqual([]);
  });

  it("throws INVALID_CONFIG for malformed YAML or a non-mapping top level", async () => {
    fs.writeFileSync(file(), "memory: [unclosed\n");
    await expect(readConfig(home)).rejects.toMatchObject({ code: "INVALID_CONFIG" });
    fs.writeFileSync(file(), "- a\n- b\n");
    const error = await readConfig(home).catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(error, "INVALID_CONFIG")).toBe(true);
    expect((error as Error).message).toContain("mapping");
  });

  it("defaults to the active profile", async () => {
    fs.writeFileSync(file(), "memory:\n  provider: vector\n");
    expect((await runWithProfile(home, () => readConfig())).memory.provider).toBe("vector");
  });
});

describe("editing config.yaml", () => {
  it("keeps comments, order and unknown keys", async () => {
    const original = `# Hermes settings
model: gpt-x   # the model
memory:
  # which provider
  provider: builtin
  memory_char_limit: 2200
custom:
  - a
  - b
`;
    fs.writeFileSync(file(), original);
    await setActiveProvider(home, "sqlite");
    await setConfigValue(home, ["memory", "sqlite", "path"], "/tmp/x.db");
    const text = fs.readFileSync(file(), "utf8");
    expect(text).toBe(`# Hermes settings
model: gpt-x # the model
memory:
  # which provider
  provider: sqlite
  memory_char_limit: 2200
  sqlite:
    path: /tmp/x.db
custom:
  - a
  - b
`);
  });

  it("writes every value it did not change exactly as it was written (the Python agent reads YAML 1.1)", async () => {
    // Normalised, `017` would become `17` (octal 15 for PyYAML), `1e3` `1e+3` (text for PyYAML).
    const untouched = `octal: 017
big: 99999999999999999999999
signed: +12
short_float: .5
exp: 1e3
hex: 0x1F
under: 1_000
yes_word: yes
tilde: ~
upper: TRUE
fraction: 1.50
inf: .inf
quoted: '017'
`;
    fs.writeFileSync(
      file(),
      `${untouched}memory:
  provider: builtin
  memory_char_limit: 0020
  user_char_limit: 0030
`,
    );
    await setActiveProvider(home, "sqlite");
    await setConfigValue(home, ["memory", "memory_char_limit"], 1500);
    expect(fs.readFileSync(file(), "utf8")).toBe(`${untouched}memory:
  provider: sqlite
  memory_char_limit: 1500
  user_char_limit: 0030
`);
  });

  it("creates the file and missing or empty sections", async () => {
    await setConfigValue(home, ["hooks", "output_spill", "enabled"], false);
    expect((await readConfig(home)).hooks.outputSpill.enabled).toBe(false);
    fs.writeFileSync(file(), "memory:\n");
    await setActiveProvider(home, "vector");
    expect(fs.readFileSync(file(), "utf8")).toBe("memory:\n  provider: vector\n");
  });

  it("setActiveProvider('') selects built-in only and refuses impossible names", async () => {
    await setActiveProvider(home, "sqlite");
    await setActiveProvider(home, "");
    expect((await readConfig(home)).memory.provider).toBe("");
    expect(fs.readFileSync(file(), "utf8")).toContain('provider: ""');
    await expect(setActiveProvider(home, "Bad Name")).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
  });

  it("refuses to overwrite a broken file or a non-mapping section", async () => {
    fs.writeFileSync(file(), "memory: [broken\n");
    await expect(setActiveProvider(home, "sqlite")).rejects.toMatchObject({ code: "INVALID_CONFIG" });
    expect(fs.readFileSync(file(), "utf8")).toBe("memory: [broken\n");
    fs.writeFileSync(file(), "memory: 5\n");
    await expect(setActiveProvider(home, "sqlite")).rejects.toMatchObject({ code: "INVALID_CONFIG" });
  });

  it("updateConfig serialises concurrent edits (no lost update)", async () => {
    await Promise.all(Array.from({ length: 8 }, (_, i) => updateConfig(home, (doc) => doc.setIn(["counters", `k${i}`], i))));
    const raw = (await readConfig(home)).raw.counters as Record<string, number>;
    expect(Object.keys(raw).sort()).toEqual(["k0", "k1", "k2", "k3", "k4", "k5", "k6", "k7"]);
    // config.yaml.lock is the persistent flock file (never deleted, by design); nothing else stays.
    expect(fs.readdirSync(home).filter((f) => f !== "config.yaml" && f !== "config.yaml.lock")).toEqual([]);
  });
});

describe("hostile config.yaml is refused with INVALID_CONFIG", () => {
  const codeOf = (fn: () => unknown): string | undefined => {
    try {
      fn();
    } catch (error) {
      return HermesMemoryError.isInstance(error) ? error.code : `not typed: ${String(error)}`;
    }
    return undefined;
  };

  it("duplicate keys are still an error (checked linearly, not by the parser)", () => {
    expect(codeOf(() => parseConfig("memory:\n  provider: a\n  provider: b\n", "/x/config.yaml"))).toBe("INVALID_CONFIG");
    expect(codeOf(() => parseConfig("memory:\n  provider: a\nother:\n  provider: b\n"))).toBeUndefined();
  });

  it("a billion-laughs alias bomb is refused before it expands", () => {
    const lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let i = 1; i < 9; i++)
      lines.push(
        `${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(9)
          .fill(`*${String.fromCharCode(96 + i)}`)
          .join(",")}]`,
      );
    expect(codeOf(() => parseConfig(lines.join("\n")))).toBe("INVALID_CONFIG");
    // A few ordinary aliases are fine.
    expect(parseConfig("base: &b { x: 1 }\nmemory:\n  sqlite: *b\n").memory.providerConfig("sqlite")).toEqual({ x: 1 });
  });

  it("nesting of exactly MAX_CONFIG_DEPTH levels is accepted and one more is refused: mappings, lists, and a mapping reached through an alias", () => {
    expect(MAX_CONFIG_DEPTH).toBe(64);
    // `n` levels counting the top-level mapping as the first.
    const mappings = (n: number) => `a: ${"{a: ".repeat(n - 2)}{a: 1${"}".repeat(n - 1)}\n`;
    const lists = (n: number) => `a: ${"[".repeat(n - 1)}1${"]".repeat(n - 1)}\n`;
    // The anchored mapping sits at level 2 (n - 1 levels in the file); its alias under x.y adds one.
    const throughAlias = (n: number) => `base: &b ${"{a: ".repeat(n - 3)}{a: 1${"}".repeat(n - 2)}\nx: {y: *b}\n`;
    for (const [shape, text] of [
      ["mappings", mappings],
      ["lists", lists],
      ["an alias", throughAlias],
    ] as const) {
      expect(
        codeOf(() => parseConfig(text(MAX_CONFIG_DEPTH))),
        `${shape}: ${MAX_CONFIG_DEPTH} levels`,
      ).toBeUndefined();
      let refused: unknown;
      try {
        parseConfig(text(MAX_CONFIG_DEPTH + 1), "/x/config.yaml");
      } catch (error) {
        refused = error;
      }
      expect(HermesMemoryError.hasCode(refused, "INVALID_CONFIG"), `${shape}: ${MAX_CONFIG_DEPTH + 1} levels`).toBe(true);
      expect((refused as Error).message).toBe(
        `/x/config.yaml nests mappings/lists deeper than ${MAX_CONFIG_DEPTH} levels. Fix the file (or move it aside to start from defaults).`,
      );
    }
    const deepest = parseConfig(
      `memory:\n  sqlite:\n    nested: ${"{a: ".repeat(MAX_CONFIG_DEPTH - 4)}{a: 1${"}".repeat(MAX_CONFIG_DEPTH - 3)}\n`,
    );
    expect(JSON.stringify(deepest.memory.providerConfig("sqlite"))).toContain('{"a":1}');
  });

  it("deeply nested flow collections do not overflow the stack", () => {
    expect(codeOf(() => parseConfig(`a: ${"[".repeat(100_000)}${"]".repeat(100_000)}\n`))).toBe("INVALID_CONFIG");
  });

  it("readConfig refuses a file over 1 MiB without parsing it", async () => {
    fs.writeFileSync(path.join(home, "config.yaml"), `# ${"x".repeat(1024 * 1024)}\n`);
    await expect(readConfig(home)).rejects.toMatchObject({
      code: "INVALID_CONFIG",
      message: expect.stringContaining(path.join(home, "config.yaml")),
    });
  });
});
