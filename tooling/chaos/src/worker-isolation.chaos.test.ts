/**
 * Failure class: a provider hosted in a worker thread (the SQLite provider, `isolation: worker`)
 * loses its thread or its whole process in the middle of a write. Every turn a resolved flush()
 * acknowledged must be found afterwards, and the store must pass `doctor`. Two ways to die: the
 * host process is killed with SIGKILL at a random point; the worker alone is ended at a random
 * point of a round's writes or flush (what a call past its bound does), after which the next
 * flush() reports the lost writes (WRITES_LOST) and a new worker writes on.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ClassFigures, runNode, tempDir, type Child } from "./support.js";

const figures = new ClassFigures("worker-isolation");
afterAll(() => figures.print());

const TRIALS = 3;

/** The acknowledged ranges a child printed, as `from-to,...`, and how many turns they hold. */
function acknowledged(child: Child): { ranges: string; count: number } {
  const ranges = child
    .lines()
    .filter((l) => l.startsWith("ACK "))
    .map((l) => l.slice(4).split(" ").map(Number) as [number, number]);
  return { ranges: ranges.map(([from, to]) => `${from}-${to}`).join(","), count: ranges.reduce((n, [from, to]) => n + to - from, 0) };
}

async function expectAllFound(home: string, acked: { ranges: string; count: number }): Promise<void> {
  const check = runNode("worker-child.mjs", ["check", home, acked.ranges]);
  const done = await check.exited;
  expect(done.code, check.stderr).toBe(0);
  const found = Number(/^FOUND (\d+)\//m.exec(check.stdout)?.[1] ?? "0");
  figures.trials++;
  figures.acknowledgedLost += acked.count - found;
  expect(check.stdout).toMatch(new RegExp(`^FOUND ${acked.count}/${acked.count}$`, "m"));
  expect(check.stdout).toMatch(/^DOCTOR ok$/m);
}

describe("worker-hosted SQLite provider killed mid-write", () => {
  it(`SIGKILL of the host process at a random point: nothing acknowledged is lost, the file passes doctor (${TRIALS} trials)`, async () => {
    for (let trial = 0; trial < TRIALS; trial++) {
      const dir = tempDir("worker-kill");
      const home = path.join(dir, "home");
      const writer = runNode("worker-child.mjs", ["stream", home, "150"]);
      await writer.waitForLine(/^ACK /, 120_000);
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.floor(Math.random() * 400)));
      writer.proc.kill("SIGKILL");
      expect((await writer.exited).signal).toBe("SIGKILL");
      const acked = acknowledged(writer);
      expect(acked.count).toBeGreaterThanOrEqual(150);
      await expectAllFound(home, acked);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);

  it(`the worker alone ended at random points of writes and flushes: nothing acknowledged is lost, lost writes are reported, a new worker writes on (${TRIALS} trials)`, async () => {
    for (let trial = 0; trial < TRIALS; trial++) {
      const dir = tempDir("worker-replace");
      const home = path.join(dir, "home");
      const writer = runNode("worker-child.mjs", ["replace", home, "150", "8"]);
      const end = await writer.exited;
      expect(end.code, writer.stderr).toBe(0);
      const lines = writer.lines();
      expect(lines).toContain("SHUTDOWN ok");
      const replacements = Number(/^REPLACEMENTS (\d+)$/m.exec(writer.stdout)?.[1]);
      expect(replacements).toBeGreaterThanOrEqual(1);
      // Writes a replaced worker had not acknowledged are reported, never silently dropped.
      const lostWarnings = writer.stderr.match(/\d+ write\(s\) handed to it were not yet acknowledged/g) ?? [];
      const lostReports = lines.filter((l) => l.startsWith("FAILED WRITES_LOST ")).length;
      if (lostWarnings.length > 0) expect(lostReports).toBeGreaterThanOrEqual(1);
      expect(lostReports).toBeLessThanOrEqual(lostWarnings.length);
      // The last round, after every replacement, is acknowledged: a new worker writes on.
      expect(lines.filter((l) => l.startsWith("ACK ")).at(-1)).toBe("ACK 1201 1202");
      await expectAllFound(home, acknowledged(writer));
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);
});
