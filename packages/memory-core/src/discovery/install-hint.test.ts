/**
 * Messages name the install command that fits where the host is installed: `npm install -g` beside
 * a global install, `npm install` in the host's project, and `hermes-memory plugins add`, which
 * works for both — in `installCommandHint`, the PROVIDER_NOT_FOUND error and a broken
 * dependency's remedy.
 */
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HermesMemoryError, discoverMemoryProviders, installCommandHint, loadMemoryProvider } from "../index.js";
import { installPackage, makeTempDir, writeFiles } from "../test-support/temp-tree.js";

let tmp: { dir: string; cleanup: () => void };
let prefix: string;
let globalModules: string;
/** Core inside a global CLI: `<prefix>/lib/node_modules/@hermes/memory-cli/node_modules/@hermes/memory-core`. */
let globalCore: string;
let project: string;
/** Core installed in `project`. */
let projectCore: string;
let home: string;
let elsewhere: string;

beforeEach(() => {
  tmp = makeTempDir("hermes-install-hint-");
  prefix = path.join(tmp.dir, "prefix");
  globalModules = path.join(prefix, "lib", "node_modules");
  globalCore = path.join(globalModules, "@hermes", "memory-cli", "node_modules", "@hermes", "memory-core");
  writeFiles(path.join(globalModules, "@hermes", "memory-cli"), { "package.json": { name: "@hermes/memory-cli" } });
  writeFiles(globalCore, { "package.json": { name: "@hermes/memory-core", version: "0.1.0" } });
  project = path.join(tmp.dir, "my app");
  writeFiles(project, { "package.json": { name: "my-app", private: true, dependencies: { "@hermes/memory-core": "^0.1.0" } } });
  projectCore = installPackage(project, "npm", { name: "@hermes/memory-core", version: "0.1.0" });
  home = path.join(tmp.dir, "home");
  elsewhere = path.join(tmp.dir, "elsewhere");
  fs.mkdirSync(home);
  fs.mkdirSync(elsewhere);
});
afterEach(() => tmp.cleanup());

describe("installCommandHint", () => {
  it("beside a global install: npm install -g (with --prefix when npm's default global prefix is another)", async () => {
    // npm's default global prefix is the one the CLI is installed in.
    const env = { npm_config_prefix: prefix };
    expect(await installCommandHint("@hermes/memory-sqlite", { hostDir: globalCore, cwd: elsewhere, env })).toBe(
      "`npm install -g @hermes/memory-sqlite` or `hermes-memory plugins add @hermes/memory-sqlite`",
    );
    // From inside some project it is still the global install that the CLI searches.
    expect(await installCommandHint("@hermes/memory-sqlite", { hostDir: globalCore, cwd: project, env })).toMatch(
      /^`npm install -g @hermes\/memory-sqlite`/,
    );
    expect(
      await installCommandHint("@hermes/memory-sqlite", {
        hostDir: globalCore,
        cwd: elsewhere,
        env: { PREFIX: path.join(tmp.dir, "other") },
      }),
    ).toBe(`\`npm install -g --prefix ${prefix} @hermes/memory-sqlite\` or \`hermes-memory plugins add @hermes/memory-sqlite\``);
  });

  it("in a project: npm install there, with --prefix (quoted) from outside it", async () => {
    expect(await installCommandHint("@hermes/memory-sqlite", { hostDir: projectCore, cwd: project })).toBe(
      "`npm install @hermes/memory-sqlite` or `hermes-memory plugins add @hermes/memory-sqlite`",
    );
    expect(await installCommandHint("@hermes/memory-sqlite", { hostDir: projectCore, cwd: path.join(project, "node_modules") })).toMatch(
      /^`npm install @hermes/,
    );
    expect(await installCommandHint("@hermes/memory-sqlite", { hostDir: projectCore, cwd: elsewhere })).toBe(
      `\`npm install --prefix '${project}' @hermes/memory-sqlite\` or \`hermes-memory plugins add @hermes/memory-sqlite\``,
    );
  });

  it("from no installation (a development checkout): npm install in your project", async () => {
    expect(await installCommandHint("<package>", { hostDir: elsewhere, cwd: elsewhere })).toBe(
      "`npm install <package>` in your project or `hermes-memory plugins add <package>`",
    );
  });
});

describe("PROVIDER_NOT_FOUND names the command for where the host is installed", () => {
  const notFound = async (options: Parameters<typeof loadMemoryProvider>[1]): Promise<string> => {
    const error = await loadMemoryProvider("ghost", { hermesHome: home, ...options }).catch((e: unknown) => e);
    expect(HermesMemoryError.hasCode(error, "PROVIDER_NOT_FOUND")).toBe(true);
    return (error as Error).message;
  };

  it("a global host", async () => {
    const message = await notFound({ hostDir: globalCore, cwd: elsewhere, env: { npm_config_prefix: prefix } });
    expect(message).toContain("Install it with `npm install -g <package>` or `hermes-memory plugins add <package>`, or put it in");
    expect(message).not.toMatch(/`npm install <package>`/);
  });

  it("a project's host, from the project and from elsewhere", async () => {
    expect(await notFound({ hostDir: projectCore, cwd: project, env: {} })).toContain(
      "Install it with `npm install <package>` or `hermes-memory plugins add <package>`",
    );
    expect(await notFound({ hostDir: projectCore, cwd: elsewhere, env: {} })).toContain(
      `Install it with \`npm install --prefix '${project}' <package>\``,
    );
  });

  it("explicit package roots (the host's installation not searched): npm install in your project", async () => {
    const message = await notFound({ hostDir: globalCore, cwd: elsewhere, env: { npm_config_prefix: prefix }, packageRoots: [] });
    expect(message).toContain("Install it with `npm install <package>` in your project or `hermes-memory plugins add <package>`");
  });
});

describe("a dependency whose package.json cannot be read", () => {
  it("is reinstalled with the command for the root it was found from", async () => {
    const broken = '{ "name": "hermes-memory-broken", "hermesMemoryProvider": "broken", ';
    writeFiles(path.join(globalModules, "hermes-memory-broken"), { "package.json": broken });
    writeFiles(project, { "package.json": { name: "my-app", private: true, dependencies: { "hermes-memory-broken": "1" } } });
    writeFiles(path.join(project, "node_modules", "hermes-memory-broken"), { "package.json": broken });
    const result = await discoverMemoryProviders({
      hermesHome: home,
      cwd: project,
      hostDir: globalCore,
      env: { npm_config_prefix: prefix },
    });
    expect(result.problems.map((p) => p.remedy)).toEqual([
      `Reinstall hermes-memory-broken (\`npm install --prefix '${project}' hermes-memory-broken\`), or remove it from ${path.join(project, "package.json")}.`,
      `Reinstall hermes-memory-broken (\`npm install -g hermes-memory-broken\`), or remove it from ${globalModules}.`,
    ]);
  });
});
