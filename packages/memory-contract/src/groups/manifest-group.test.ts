import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { MinimalProvider } from "../__fixtures__/minimal-provider.js";
import type { ContractCapabilities } from "../contract-setup.js";
import { runMemoryProviderContract } from "../run-contract.js";

const fixtureModule = pathToFileURL(
  path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "__fixtures__", "minimal-provider.js"),
).href;

const CAPS: ContractCapabilities = {
  tools: true,
  recall: true,
  checkpoint: true,
  search: true,
  sessionSwitch: true,
  mirrorsBuiltinWrites: true,
};

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

function packageDir(manifest: unknown, files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "contract-manifest-group-"));
  dirs.push(dir);
  fs.writeFileSync(
    path.join(dir, "package.json"),
    JSON.stringify({ name: "manifest-group-fixture", type: "module", hermesMemoryProvider: manifest }),
  );
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, name), text);
  return dir;
}

async function manifestResults(dir: string) {
  const report = await runMemoryProviderContract(
    { name: "minimal", createProvider: () => new MinimalProvider(), capabilities: CAPS, packageDir: dir },
    { only: ["MANIFEST"] },
  );
  return Object.fromEntries(
    report.results.filter((r) => r.group === "MANIFEST").map((r) => [r.id, { status: r.status, reason: r.reason ?? "" }]),
  );
}

describe("MANIFEST clauses go through core's discovery and loader", () => {
  it("pass for a package whose entry registers the declared provider", async () => {
    const dir = packageDir(
      { name: "minimal", entry: "./entry.js" },
      {
        "entry.js": `import { MinimalProvider } from ${JSON.stringify(fixtureModule)};\nexport function register(ctx) { ctx.registerMemoryProvider(new MinimalProvider()); }\n`,
      },
    );
    const r = await manifestResults(dir);
    expect(Object.values(r).map((x) => x.status)).toEqual(["pass", "pass", "pass", "pass"]);
  });

  it("C-MANIFEST-2 fails with core's MISSING_ENTRY problem when the entry is absent", async () => {
    const r = await manifestResults(packageDir({ name: "minimal", entry: "./dist/none.js" }, {}));
    expect(r["C-MANIFEST-1"]!.status).toBe("pass");
    expect(r["C-MANIFEST-2"]).toMatchObject({ status: "fail" });
    expect(r["C-MANIFEST-2"]!.reason).toContain("MISSING_ENTRY");
    expect(r["C-MANIFEST-3"]!.status).toBe("skip");
  });

  it("C-MANIFEST-2 fails with ENTRY_OUTSIDE_PACKAGE when the entry climbs out of the package", async () => {
    const r = await manifestResults(packageDir({ name: "minimal", entry: "../outside.js" }, {}));
    expect(r["C-MANIFEST-2"]!.reason).toContain("ENTRY_OUTSIDE_PACKAGE");
  });

  it("C-MANIFEST-3 fails with the loader's error when the registered provider has another name", async () => {
    const dir = packageDir(
      { name: "minimal", entry: "./entry.js" },
      {
        "entry.js": `import { MinimalProvider } from ${JSON.stringify(fixtureModule)};\nclass Renamed extends MinimalProvider { constructor() { super(); this.name = "renamed"; } }\nexport function register(ctx) { ctx.registerMemoryProvider(new Renamed()); }\n`,
      },
    );
    const r = await manifestResults(dir);
    expect(r["C-MANIFEST-2"]!.status).toBe("pass");
    expect(r["C-MANIFEST-3"]!.status).toBe("fail");
    expect(r["C-MANIFEST-3"]!.reason).toContain("'renamed'");
  });
});
