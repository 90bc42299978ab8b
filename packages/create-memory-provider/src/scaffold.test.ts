import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { HermesMemoryError, type ConfigField, type ToolSchema } from "@hermes/memory-core";
import { memoryToolSchemas, PREFETCH_CONFIG_FIELDS, type MemoryToolAction } from "@hermes/memory-provider-kit";
import { deriveProviderName, peerRange, scaffoldProvider } from "./scaffold.js";

const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));
const temps: string[] = [];
function tempDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "create-provider-"));
  temps.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of temps.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe("peerRange", () => {
  it("admits the next minor and stops below the next major, before and after 1.0.0", () => {
    expect(peerRange("0.1.0")).toBe(">=0.1.0 <1.0.0");
    expect(peerRange("0.4.2")).toBe(">=0.4.2 <1.0.0");
    expect(peerRange("1.3.0")).toBe("^1.3.0");
    // A prerelease (a snapshot release) is pinned exactly: ranges do not admit prereleases.
    expect(peerRange("0.0.0-snapshot-20260101")).toBe("0.0.0-snapshot-20260101");
  });
});

describe("scaffoldProvider", () => {
  it("writes a complete provider package with the manifest field and no template leftovers", async () => {
    const dir = path.join(tempDir(), "hermes-memory-notes");
    const result = await scaffoldProvider({ directory: dir, description: "Keeps notes" });
    expect(result.providerName).toBe("notes");
    expect(result.files).toEqual(
      expect.arrayContaining([
        ".gitignore",
        "README.md",
        "package.json",
        "src/cli.ts",
        "src/index.test.ts",
        "src/index.ts",
        "tsconfig.json",
      ]),
    );
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
    expect(pkg.name).toBe("hermes-memory-notes");
    expect(pkg.hermesMemoryProvider).toMatchObject({
      name: "notes",
      entry: "./dist/index.js",
      cli: "./dist/cli.js",
      description: "Keeps notes",
    });
    // Core as a peer from its current version up to (not including) its next major: before 1.0.0
    // a caret range would exclude core's next minor, and every core minor would force a major here.
    const coreVersion = JSON.parse(fs.readFileSync(path.join(repoRoot, "packages/memory-core/package.json"), "utf8")).version as string;
    expect(pkg.peerDependencies["@hermes/memory-core"]).toBe(peerRange(coreVersion));
    expect(pkg.devDependencies["@hermes/memory-core"]).toBe(peerRange(coreVersion));
    // The generated provider builds on the provider kit: a runtime dependency at the kit's version.
    const kitVersion = JSON.parse(fs.readFileSync(path.join(repoRoot, "packages/memory-provider-kit/package.json"), "utf8"))
      .version as string;
    expect(pkg.dependencies["@hermes/memory-provider-kit"]).toBe(`^${kitVersion}`);
    expect(fs.readFileSync(path.join(dir, "src/index.ts"), "utf8")).toMatch(
      /import \{[^}]*\bToolRouter\b[^}]*\} from "@hermes\/memory-provider-kit";/,
    );
    // Only the kit's authoring entry: its SQLite search engine (`/sqlite`) is not what a new provider starts from.
    const kitEntries = result.files
      .filter((f) => f.endsWith(".ts"))
      .flatMap((f) =>
        [...fs.readFileSync(path.join(dir, f), "utf8").matchAll(/from "(@hermes\/memory-provider-kit[^"]*)"/g)].map((m) => m[1]),
      );
    expect(new Set(kitEntries)).toEqual(new Set(["@hermes/memory-provider-kit"]));
    for (const file of result.files) expect(fs.readFileSync(path.join(dir, file), "utf8")).not.toMatch(/\{\{\w+\}\}/);
    expect(fs.readFileSync(path.join(dir, "src/index.ts"), "utf8")).toContain("class NotesMemoryProvider extends MemoryProvider");
  });

  it("refuses a non-empty directory and leaves it untouched", async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, "keep.txt"), "mine");
    const error = await scaffoldProvider({ directory: dir, providerName: "ok", packageName: "ok-pkg" }).catch((e: unknown) => e);
    expect(HermesMemoryError.isInstance(error) && error.code).toBe("INVALID_ARGUMENT");
    expect(String((error as Error).message)).toContain("not empty");
    expect(fs.readdirSync(dir)).toEqual(["keep.txt"]);
  });

  it.each(["builtin", "Bad Name", "-dash", "a".repeat(65), ""])("rejects the provider name %j", async (name) => {
    const dir = path.join(tempDir(), "pkg");
    const error = await scaffoldProvider({ directory: dir, providerName: name }).catch((e: unknown) => e);
    expect(HermesMemoryError.isInstance(error) && error.code).toBe("INVALID_ARGUMENT");
    expect(fs.existsSync(dir)).toBe(false);
  });

  it.each(["node_modules", "favicon.ico", "http", "fs"])(
    "rejects the npm-reserved package name %j before writing anything",
    async (name) => {
      const dir = path.join(tempDir(), name);
      const error = await scaffoldProvider({ directory: dir, providerName: "ok" }).catch((e: unknown) => e);
      expect(HermesMemoryError.isInstance(error) && error.code).toBe("INVALID_ARGUMENT");
      expect(String((error as Error).message)).toContain("--package-name");
      expect(fs.existsSync(dir)).toBe(false);
    },
  );

  it("refuses a target that is a file or a dangling symlink with a typed error, leaving it untouched", async () => {
    const root = tempDir();
    const file = path.join(root, "afile");
    fs.writeFileSync(file, "mine");
    const onFile = await scaffoldProvider({ directory: file, providerName: "ok", packageName: "ok-pkg" }).catch((e: unknown) => e);
    expect(HermesMemoryError.isInstance(onFile) && onFile.code).toBe("INVALID_ARGUMENT");
    expect(String((onFile as Error).message)).toContain("not a directory");
    expect(fs.readFileSync(file, "utf8")).toBe("mine");
    const link = path.join(root, "dangling");
    fs.symlinkSync(path.join(root, "nowhere"), link);
    const onLink = await scaffoldProvider({ directory: link, providerName: "ok", packageName: "ok-pkg" }).catch((e: unknown) => e);
    expect(HermesMemoryError.isInstance(onLink) && onLink.code).toBe("INVALID_ARGUMENT");
    expect(fs.existsSync(path.join(root, "nowhere"))).toBe(false);
  });

  it("keeps package.json valid JSON and index.ts a closed comment whatever the description holds", async () => {
    const dir = path.join(tempDir(), "hermes-memory-desc");
    const description = 'Tab\there */ evil /* "quoted" back\\slash\r\nnext\u0007bell';
    await scaffoldProvider({ directory: dir, providerName: "desc", description });
    const pkg = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
    expect([...String(pkg.description)].some((ch) => ch.charCodeAt(0) < 0x20)).toBe(false);
    expect(pkg.hermesMemoryProvider.description).toBe(pkg.description);
    const source = fs.readFileSync(path.join(dir, "src/index.ts"), "utf8");
    const head = source.slice(0, source.indexOf("export class"));
    const doc = head.slice(head.lastIndexOf("/**")).trimEnd();
    // The class's doc comment closes only at its own end, right before `export class`.
    expect(doc.indexOf("*/")).toBe(doc.length - 2);
    expect(doc).toContain("evil");
  });

  it("names every tool within OpenAI's ^[a-zA-Z0-9_-]{1,64}$ for the longest provider name", async () => {
    const dir = path.join(tempDir(), "pkg");
    await scaffoldProvider({ directory: dir, providerName: `${"n".repeat(40)}.${"m".repeat(23)}` });
    const source = fs.readFileSync(path.join(dir, "src/index.ts"), "utf8");
    // The tools are the kit's memoryToolSchemas, named `${prefix}${action}` with the prefix `<name>_notes_`.
    const prefix = /"([a-zA-Z0-9_-]*_notes_)"/.exec(source)?.[1];
    const actions = /actions: \[([^\]]*)\]/.exec(source)?.[1]?.match(/[a-z]+/g) ?? [];
    expect(prefix).toBeDefined();
    expect(actions.length).toBeGreaterThan(0);
    for (const action of actions) expect(`${prefix}${action}`).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
  });

  it("derives provider names from package names", () => {
    expect(deriveProviderName("@acme/hermes-memory-notes")).toBe("notes");
    expect(deriveProviderName("My_Store")).toBe("my_store");
  });
});

describe("the generated package", () => {
  // Builds and tests the scaffold without a registry: its dependencies are linked to this workspace.
  it("builds and passes its own tests and the contract kit without edits", async () => {
    const dir = path.join(tempDir(), "hermes-memory-scratch");
    await scaffoldProvider({ directory: dir, providerName: "scratch" });
    const modules = path.join(dir, "node_modules");
    fs.mkdirSync(path.join(modules, "@hermes"), { recursive: true });
    fs.symlinkSync(path.join(repoRoot, "packages/memory-core"), path.join(modules, "@hermes/memory-core"));
    fs.symlinkSync(path.join(repoRoot, "packages/memory-contract"), path.join(modules, "@hermes/memory-contract"));
    fs.symlinkSync(path.join(repoRoot, "packages/memory-provider-kit"), path.join(modules, "@hermes/memory-provider-kit"));
    for (const dep of ["typescript", "vitest", "@types", "commander"]) {
      const source = fs.existsSync(path.join(repoRoot, "node_modules", dep))
        ? path.join(repoRoot, "node_modules", dep)
        : path.join(repoRoot, "packages/memory-contract/node_modules", dep);
      fs.symlinkSync(source, path.join(modules, dep));
    }
    const build = spawnSync(process.execPath, [path.join(modules, "typescript/bin/tsc"), "-p", "tsconfig.build.json"], {
      cwd: dir,
      encoding: "utf8",
    });
    expect(build.stdout + build.stderr).toBe("");
    expect(fs.existsSync(path.join(dir, "dist/index.js"))).toBe(true);
    // The built provider loads the kit at run time, so the tests below exercise it.
    expect(fs.readFileSync(path.join(dir, "dist/index.js"), "utf8")).toContain('from "@hermes/memory-provider-kit"');
    // It follows the reference providers' pattern: the kit's prefetch settings and the kit's tool schemas.
    const built = (await import(pathToFileURL(path.join(dir, "dist/index.js")).href)) as {
      default: new () => { getConfigSchema(): ConfigField[]; getToolSchemas(): ToolSchema[] };
    };
    const provider = new built.default();
    const settings = provider.getConfigSchema();
    expect(settings).toEqual(expect.arrayContaining(PREFETCH_CONFIG_FIELDS.map((field) => ({ ...field }))));
    expect(settings.map((field) => field.key)).not.toContain("recall_limit");
    const tools = provider.getToolSchemas();
    expect(tools.length).toBeGreaterThan(0);
    for (const tool of tools) {
      const action = tool.name.replace(/^scratch_notes_/, "") as MemoryToolAction;
      expect(tool.parameters).toEqual(memoryToolSchemas({ prefix: "scratch_notes_", actions: [action], store: "notes" })[0]!.parameters);
    }
    const test = spawnSync(process.execPath, [path.join(modules, "vitest/vitest.mjs"), "run", "--reporter=verbose"], {
      cwd: dir,
      encoding: "utf8",
      env: { ...process.env, CI: "1", NO_COLOR: "1", FORCE_COLOR: "0" },
    });
    expect(test.status, test.stdout + test.stderr).toBe(0);
    expect(test.stdout).toMatch(/Tests\s+\d+ passed/);
    // The contract kit's clauses ran, not only the package's own two tests.
    expect(Number(/Tests\s+(\d+) passed/.exec(test.stdout)?.[1])).toBeGreaterThan(20);
    expect(test.stdout).not.toMatch(/failed/);
    // The generated provider keeps its users apart, in its tool too (it declares userScoping).
    for (const clause of ["C-ISOLATION-2", "C-ISOLATION-4"]) expect(test.stdout).toMatch(new RegExp(`✓ .*${clause} `));
  }, 120_000);
});
