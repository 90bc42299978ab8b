/**
 * Inspection (`hermes-memory memory status`: `initializeForInspection`, `stats`, `shutdown`)
 * creates nothing in any layout: not on a fresh home, and not where stored memory lacks a file a
 * start would create; nor does it send what an outbox holds. Real files, and the Pinecone fake.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { VectorMemoryProvider, type VectorMemoryProviderOptions } from "./index.js";
import { cleanupsAfterEach, layoutsWithFakes } from "./test-support/layouts.js";

const cleanups = cleanupsAfterEach();

/** Every file and folder under `dir` (relative paths, sorted). */
function tree(dir: string): string[] {
  return (fs.readdirSync(dir, { recursive: true }) as string[]).sort();
}

function tempHome(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "vector-inspection-"));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The file of a layout's stored memory that a start would create again when it is gone. */
const RECREATED = { local: "index.usearch", "pinecone sidecar": "outbox.sqlite", "pinecone remote": "remote-outbox.sqlite" } as const;
const LAYOUTS = layoutsWithFakes("inspect", 16).map((layout) => ({ ...layout, recreated: RECREATED[layout.name] }));

/** What `memory status` does: inspect, read the stats, shut down. */
async function inspect(home: string, options: VectorMemoryProviderOptions): Promise<Record<string, unknown>> {
  const provider = new VectorMemoryProvider(options);
  try {
    await provider.initializeForInspection("hermes-memory-status", { hermesHome: home, platform: "cli" });
    return (await provider.stats()) as unknown as Record<string, unknown>;
  } finally {
    await provider.shutdown();
  }
}

describe.each(LAYOUTS)("memory status ($name layout)", (layout) => {
  it("creates no file on a fresh home, and reports nothing stored", async () => {
    const home = tempHome();
    const before = tree(home);
    expect(await inspect(home, layout.options())).toMatchObject({ items: 0 });
    expect(tree(home)).toEqual(before);
  });

  it("creates no file where memory is stored, also when a file a start would create is gone", async () => {
    const home = tempHome();
    const options = layout.options();
    const writer = new VectorMemoryProvider(options);
    await writer.initialize("s1", { hermesHome: home, agentIdentity: "team", userId: "alice" });
    writer.remember({ content: "the boiler is serviced in May", kind: "fact" });
    await writer.shutdown();
    fs.rmSync(path.join(home, "memory", "vector", layout.recreated));
    const before = tree(home);
    expect(await inspect(home, options)).toMatchObject({ items: 1 });
    expect(tree(home)).toEqual(before);
  });
});

describe("memory status (pinecone remote layout) with writes waiting in the outbox", () => {
  it("leaves them there: nothing is sent, nothing created", async () => {
    const home = tempHome();
    const remote = LAYOUTS[2]!;
    const remoteFake = remote.fake()!;
    const options = remote.options();
    const writer = new VectorMemoryProvider(options);
    await writer.initialize("s1", { hermesHome: home, agentIdentity: "team", userId: "alice" });
    remoteFake.failNext(503, 1000);
    writer.remember({ content: "the gate code is 1234", kind: "fact" });
    await expect(writer.shutdown()).rejects.toThrow(/kept in the outbox/);
    remoteFake.clearFaults();
    const before = tree(home);
    const upserts = remoteFake.requests.filter((r) => r.path.endsWith("/vectors/upsert")).length;
    expect(await inspect(home, options)).toMatchObject({ pendingWrites: 1 });
    expect(remoteFake.requests.filter((r) => r.path.endsWith("/vectors/upsert")).length).toBe(upserts);
    expect(tree(home)).toEqual(before);
  });
});
