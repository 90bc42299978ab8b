import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "./errors.js";
import { loadMemoryProvider } from "./loader.js";
import { makeTempDir, providerSource, PROVIDER_MODULE_URL, writeFiles } from "./test-support/temp-tree.js";

// Provider modules that throw or export hostile values: loading fails with a typed error (never
// an untyped one raised by the loader's own message formatting).

let tmp: ReturnType<typeof makeTempDir>;
let home: string;

beforeEach(() => {
  tmp = makeTempDir("hermes-loader-hostile-");
  home = path.join(tmp.dir, "home");
  fs.mkdirSync(home, { recursive: true });
});
afterEach(() => tmp.cleanup());

const opts = () => ({ hermesHome: home, cwd: tmp.dir, env: {}, packageRoots: [], importTimeoutMs: 2000 });

function plugin(source: string): void {
  writeFiles(path.join(home, "plugins", "hostile"), { "plugin.yaml": "name: hostile\n", "index.js": source });
}

async function loadError(): Promise<HermesMemoryError> {
  const error = await loadMemoryProvider("hostile", opts()).then(
    () => null,
    (e: unknown) => e,
  );
  expect(HermesMemoryError.isInstance(error)).toBe(true);
  return error as HermesMemoryError;
}

const BAD_MESSAGE_ERROR = `(() => { const e = new Error("x"); Object.defineProperty(e, "message", { get() { throw new Error("message getter"); } }); return e; })()`;

describe("hostile provider modules", () => {
  it("an import that throws an Error whose message getter throws is PROVIDER_LOAD_FAILED", async () => {
    plugin(`// registerMemoryProvider\nthrow ${BAD_MESSAGE_ERROR};\n`);
    const error = await loadError();
    expect(error.code).toBe("PROVIDER_LOAD_FAILED");
    expect(error.message).toContain("could not be read");
  });

  it("a register() that throws such an error before registering is PROVIDER_LOAD_FAILED", async () => {
    plugin(`// registerMemoryProvider\nexport function register() { throw ${BAD_MESSAGE_ERROR}; }\n`);
    const error = await loadError();
    expect(error.code).toBe("PROVIDER_LOAD_FAILED");
  });

  it("a provider whose name getter throws is INVALID_PROVIDER", async () => {
    plugin(providerSource("hostile", { body: `get name() { throw new Error("name getter"); }` }).replace('name = "hostile";', ""));
    const error = await loadError();
    expect(error.code).toBe("INVALID_PROVIDER");
    expect(error.message).toContain("name");
  });

  it("a provider whose name is an object with a throwing toString is PROVIDER_NAME_MISMATCH", async () => {
    plugin(providerSource("hostile").replace('name = "hostile";', `name = { toString() { throw new Error("toString"); } };`));
    const error = await loadError();
    expect(error.code).toBe("PROVIDER_NAME_MISMATCH");
  });

  it("exports whose property access throws (Proxies) are PROVIDER_LOAD_FAILED", async () => {
    plugin(
      `import { MemoryProvider } from ${JSON.stringify(PROVIDER_MODULE_URL)};\n// registerMemoryProvider\n` +
        `const trap = { get() { throw new Error("trap"); } };\n` +
        `export default new Proxy({}, trap);\nexport const Other = new Proxy(function () {}, trap);\n`,
    );
    const error = await loadError();
    expect(error.code).toBe("PROVIDER_LOAD_FAILED");
  });

  it("an exported MemoryProvider subclass whose constructor throws is named in the error", async () => {
    plugin(
      `import { MemoryProvider } from ${JSON.stringify(PROVIDER_MODULE_URL)};\n` +
        `export class Broken extends MemoryProvider { constructor() { super(); throw new Error("ctor boom"); } }\n`,
    );
    const error = await loadError();
    expect(error.code).toBe("PROVIDER_LOAD_FAILED");
    expect(error.message).toContain("ctor boom");
  });
});
