/**
 * Failure class: the process writing a burst of turns to the SQLite provider is killed with
 * SIGKILL at a random point, while its WAL checkpoints run on their own thread (a burst of
 * hundreds of turns per flush starts that thread). Every turn a resolved flush() acknowledged must
 * be found after a restart, the file must pass `doctor` (integrity_check, FTS consistency), and
 * the next process must write on.
 */
import fs from "node:fs";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { ClassFigures, runNode, tempDir } from "./support.js";

const figures = new ClassFigures("sqlite-burst-kill");
afterAll(() => figures.print());

const TRIALS = 4;
const ROUND = 600;

describe("sqlite provider killed during a burst of writes", () => {
  it(`SIGKILL at a random point of ${ROUND}-turn rounds (checkpoints on their own thread): nothing acknowledged is lost, the file passes doctor, the next writer writes on (${TRIALS} trials)`, async () => {
    for (let trial = 0; trial < TRIALS; trial++) {
      const dir = tempDir("sqlite-kill");
      const home = path.join(dir, "home");
      const writer = runNode("sqlite-child.mjs", ["stream", home, String(ROUND)]);
      await writer.waitForLine(/^ACK /, 120_000);
      // Somewhere inside a later round: during the queue's writes or a checkpoint.
      await new Promise((resolve) => setTimeout(resolve, 20 + Math.floor(Math.random() * 400)));
      writer.proc.kill("SIGKILL");
      const end = await writer.exited;
      expect(end.signal).toBe("SIGKILL");
      const acked = Math.max(
        ...writer
          .lines()
          .filter((l) => l.startsWith("ACK "))
          .map((l) => Number(l.slice(4))),
      );
      expect(acked).toBeGreaterThanOrEqual(ROUND);

      const check = runNode("sqlite-child.mjs", ["check", home, String(acked)]);
      const done = await check.exited;
      expect(done.code, check.stderr).toBe(0);
      const found = Number(/^FOUND (\d+)\//m.exec(check.stdout)?.[1] ?? "0");
      figures.trials++;
      figures.acknowledgedLost += acked - found;
      expect(check.stdout).toMatch(new RegExp(`^FOUND ${acked}/${acked} `, "m"));
      expect(check.stdout).toMatch(/^DOCTOR ok$/m);

      const next = runNode("sqlite-child.mjs", ["seed", home, "10"]);
      expect((await next.exited).code, next.stderr).toBe(0);
      expect(next.stdout).toMatch(/^ACK 10$/m);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 600_000);
});
