import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const packageDir = fileURLToPath(new URL("..", import.meta.url));

/** What `consoleLogger()` prints on stderr for `calls` (the body of a module given `logger`, `HermesMemoryError`). */
function logged(calls: string): string {
  const script = `import { consoleLogger, HermesMemoryError } from "@hermes/memory-core";\nconst logger = consoleLogger();\n${calls}`;
  const run = spawnSync(process.execPath, ["--input-type=module", "-e", script], { cwd: packageDir, encoding: "utf8" });
  expect(run.status, run.stderr).toBe(0);
  return run.stderr;
}

describe("consoleLogger", () => {
  it("prints an expected failure (a typed error reporting an outside condition) as one line with its code, without a stack", () => {
    const stderr = logged(`
const outage = new HermesMemoryError({ code: "STORAGE_FAILED", message: "Pinecone did not answer; the writes stay in the outbox.", cause: new Error("ECONNREFUSED") });
logger.warn("Memory provider 'vector' on_session_end failed: " + outage.message, outage);
logger.error("Saving failed", new HermesMemoryError({ code: "PROVIDER_TIMEOUT", message: "The provider did not answer within 15 s." }));
logger.warn("Memory provider 'sqlite' is not available", new HermesMemoryError({ code: "NATIVE_MODULE_MISSING", message: "better-sqlite3's addon was not built: run npm rebuild better-sqlite3." }));
`);
    expect(stderr).toBe(
      [
        "[hermes-memory] Memory provider 'vector' on_session_end failed: Pinecone did not answer; the writes stay in the outbox. [STORAGE_FAILED]",
        "[hermes-memory] Saving failed — The provider did not answer within 15 s. [PROVIDER_TIMEOUT]",
        "[hermes-memory] Memory provider 'sqlite' is not available — better-sqlite3's addon was not built: run npm rebuild better-sqlite3. [NATIVE_MODULE_MISSING]",
        "",
      ].join("\n"),
    );
  });

  it("keeps the stack of a bug: an untyped error, or a typed one whose code is not an outside condition", () => {
    const stderr = logged(`
logger.warn("A hook failed", new TypeError("cannot read properties of undefined"));
logger.warn("Bad call", new HermesMemoryError({ code: "INVALID_ARGUMENT", message: "limit must be a positive integer" }));
`);
    expect(stderr).toContain("[hermes-memory] A hook failed TypeError: cannot read properties of undefined\n    at ");
    expect(stderr).toMatch(/\[hermes-memory\] Bad call HermesMemoryError: limit must be a positive integer\n\s+at /);
  });
});
