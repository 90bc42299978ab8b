/**
 * The root README opens with what an app developer does, and its examples are the real API: the
 * `openMemory()` example runs against the built packages and prints what the README shows, every
 * TypeScript example typechecks, and every `hermes-memory` command it shows exists. Versions the
 * READMEs quote are the ones the workspace uses.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { readWorkspaceManifests } from "./workspace-manifests.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
/** This package: its devDependencies are what the examples import, so examples are written here to resolve them. */
const here = fileURLToPath(new URL("..", import.meta.url));
const readme = fs.readFileSync(path.join(root, "README.md"), "utf8");
const cliBin = path.join(root, "packages/memory-cli/dist/bin.js");

/** The code blocks of `text` in `language`, in order. */
function blocks(text: string, language: string): string[] {
  return [...text.matchAll(new RegExp("```" + language + "\\n([\\s\\S]*?)```", "g"))].map((m) => m[1]!);
}

/** `text` with dates replaced: the recall shows the day a turn was stored. */
const undated = (text: string) => text.replace(/\d{4}-\d{2}-\d{2}/g, "<date>");

/** Write `files` into a fresh folder of this package for the duration of `fn`. */
function withFiles<T>(files: Record<string, string>, fn: (dir: string) => T): T {
  const dir = fs.mkdtempSync(path.join(here, ".readme-examples-"));
  try {
    for (const [name, content] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), content);
    return fn(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** The README's `## ` sections in order (a `## ` line inside a code block is not a heading). */
function sections(text: string): string[] {
  const out: string[] = [];
  let fenced = false;
  for (const line of text.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    if (!fenced && line.startsWith("## ")) out.push("");
    if (out.length > 0) out[out.length - 1] += `${line}\n`;
  }
  return out;
}

describe("the root README", () => {
  const [app, contributors] = sections(readme);

  it("opens with what an app developer does: install, openMemory() with userId, the AI SDK, an MCP client", () => {
    expect(app).toMatch(/^## Add memory to your app\n/);
    expect(blocks(app!, "bash")[0]!.trim()).toBe("npm install @hermes/memory-core @hermes/memory-sqlite");
    const [first, aiSdk] = blocks(app!, "ts");
    expect(first).toMatch(/openMemory\(\{[^}]*userId/);
    expect(aiSdk).toMatch(/wrapLanguageModel\([\s\S]*memoryMiddleware\(/);
    expect(JSON.parse(blocks(app!, "json")[0]!)).toEqual({ mcpServers: { "hermes-memory": { command: "hermes-memory", args: ["mcp"] } } });
    // Then the contributor's commands, the time the tests take, and what the native build needs.
    expect(contributors).toMatch(/^## Quick start/);
    expect(contributors).toMatch(/about \d+ minutes/);
    for (const tool of ["python3", "make", "g++"]) expect(contributors).toContain(`\`${tool}\``);
  });

  it("the openMemory() example runs and prints the recall shown", () => {
    const example = blocks(app!, "ts")[0]!;
    const shown = blocks(app!, "text")[0]!;
    const home = fs.mkdtempSync(path.join(os.tmpdir(), "readme-home-"));
    try {
      const run = withFiles({ "example.mjs": example }, (dir) =>
        spawnSync(process.execPath, [path.join(dir, "example.mjs")], {
          cwd: here,
          encoding: "utf8",
          env: { ...process.env, HERMES_HOME: home },
        }),
      );
      expect(run.stderr).toBe("");
      expect(undated(run.stdout)).toBe(undated(shown));
      expect(fs.existsSync(path.join(home, "memory", "sqlite.db"))).toBe(true);
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  }, 60_000);

  it("every TypeScript example typechecks against the packages", () => {
    const examples = blocks(readme, "ts");
    expect(examples.length).toBeGreaterThanOrEqual(2);
    const diagnostics = withFiles(Object.fromEntries(examples.map((code, i) => [`example-${i + 1}.ts`, code])), (dir) => {
      const program = ts.createProgram(
        examples.map((_, i) => path.join(dir, `example-${i + 1}.ts`)),
        {
          target: ts.ScriptTarget.ES2022,
          module: ts.ModuleKind.NodeNext,
          moduleResolution: ts.ModuleResolutionKind.NodeNext,
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: ["node"],
          typeRoots: [path.join(root, "node_modules/@types")],
        },
      );
      return ts.getPreEmitDiagnostics(program).map((d) => {
        const where = d.file ? `${path.basename(d.file.fileName)}:${d.file.getLineAndCharacterOfPosition(d.start ?? 0).line + 1}` : "";
        return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`;
      });
    });
    expect(diagnostics).toEqual([]);
  }, 120_000);

  it("every hermes-memory command it shows exists (its --help exits 0)", () => {
    const lines = blocks(readme, "bash")
      .flatMap((b) => b.split(/\n|&&/))
      .map((l) => l.trim());
    const commands = lines
      .filter((l) => l.startsWith("hermes-memory "))
      .map((l) =>
        l
          .slice("hermes-memory ".length)
          .split(/\s+/)
          .filter((w) => /^[a-z]+$/.test(w))
          .slice(0, 2),
      );
    const config = JSON.parse(blocks(readme, "json")[0]!).mcpServers["hermes-memory"] as { command: string; args: string[] };
    const bin = JSON.parse(fs.readFileSync(path.join(root, "packages/memory-cli/package.json"), "utf8")).bin as Record<string, string>;
    expect(Object.keys(bin)).toContain(config.command);
    commands.push(config.args);
    expect(commands.length).toBeGreaterThanOrEqual(3);
    for (const words of commands) {
      const run = spawnSync(process.execPath, [cliBin, ...words, "--help"], {
        cwd: os.tmpdir(),
        encoding: "utf8",
        env: { ...process.env, HERMES_HOME: os.tmpdir() },
      });
      expect({ words, code: run.status, stderr: run.stderr }).toEqual({ words, code: 0, stderr: "" });
      expect(run.stdout).toContain(`Usage: hermes-memory ${words.join(" ")}`);
    }
  }, 60_000);
});

describe("versions quoted in the READMEs", () => {
  const readmes = [
    "README.md",
    ...["packages", "providers", "tooling"].flatMap((d) => fs.readdirSync(path.join(root, d)).map((p) => `${d}/${p}/README.md`)),
  ].filter((f) => fs.existsSync(path.join(root, f)));
  // Published packages only: what a README's reader installs.
  const manifests = readWorkspaceManifests(root)
    .filter(({ file }) => !path.relative(root, file).startsWith("tooling"))
    .map(({ manifest }) => manifest as { peerDependencies?: Record<string, string>; devDependencies?: Record<string, string> });

  it("pnpm is the version package.json pins", () => {
    const pinned = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8")).packageManager.replace("pnpm@", "");
    for (const file of readmes) {
      for (const [, version] of fs.readFileSync(path.join(root, file), "utf8").matchAll(/pnpm@(\d+\.\d+\.\d+)/g))
        expect({ file, version }).toEqual({ file, version: pinned });
    }
  });

  it("the @hermes/memory-core range is the one the workspace's packages declare", () => {
    const ranges = new Set(manifests.map((m) => m.peerDependencies?.["@hermes/memory-core"]).filter(Boolean));
    expect(ranges.size).toBe(1);
    const [range] = ranges;
    for (const file of readmes) {
      const text = fs.readFileSync(path.join(root, file), "utf8");
      for (const [quoted] of text.matchAll(/@hermes\/memory-core[^\n]{0,60}?\^\d+\.\d+\.\d+/g))
        expect({ file, quoted: /\^\d+\.\d+\.\d+/.exec(quoted)![0] }).toEqual({ file, quoted: range });
    }
  });

  it("the ai SDK and TypeScript versions are the ones the packages use", () => {
    const devVersion = (name: string) => manifests.map((m) => m.devDependencies?.[name]).find(Boolean) as string;
    for (const file of readmes) {
      const text = fs.readFileSync(path.join(root, file), "utf8");
      for (const [, version] of text.matchAll(/tested with (\d+\.\d+\.\d+)/g))
        expect({ file, version }).toEqual({ file, version: devVersion("ai") });
      for (const [, version] of text.matchAll(/"typescript": "(\d+\.\d+\.\d+)"/g))
        expect({ file, version }).toEqual({ file, version: devVersion("typescript") ?? version });
    }
  });
});
