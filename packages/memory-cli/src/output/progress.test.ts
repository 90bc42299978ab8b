import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createCliContext } from "../cli-context.js";
import type { CliIo } from "../cli-io.js";
import { terminalScreen } from "../test-support/cli-harness.js";
import { EtaEstimator, formatEta } from "./eta.js";
import { drawProgressBar, renderBar, startSpinner } from "./progress.js";

/** A terminal-like stream that keeps what was written. */
function terminal(columns = 72): Writable & { isTTY: boolean; columns: number; written: string } {
  const stream = new Writable({
    write(chunk: Buffer | string, _encoding, done) {
      stream.written += chunk.toString();
      done();
    },
  }) as Writable & { isTTY: boolean; columns: number; written: string };
  stream.isTTY = true;
  stream.columns = columns;
  stream.written = "";
  return stream;
}

const SPINNER_OR_BAR = /[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏█░◒◐◓◑◇▲]/;

describe("progress bars", () => {
  it("show the label, cells, percent, counts and the estimate, within the terminal's width", () => {
    expect(renderBar("Importing", 480, 1000, "ETA 12s", 71)).toBe("Importing [██████████████░░░░░░░░░░░░░░░░]  48%  480/1,000  ETA 12s");
    const narrow = renderBar("Importing", 480, 1000, "ETA 12s", 40);
    expect(narrow).toBe("Importing  48%  480/1,000  ETA 12s");
  });

  it("are erased when the work ends, leaving the cursor visible and no glyph behind", () => {
    const stream = terminal();
    const bar = drawProgressBar(stream, "Importing");
    bar.update(0, 200);
    expect(terminalScreen(stream.written)).toEqual({
      lines: [expect.stringMatching(/^Importing \[░+\] {3}0% {2}0\/200 {2}ETA --$/)],
      cursorVisible: false,
    });
    bar.update(200, 200);
    expect(terminalScreen(stream.written).lines[0]).toMatch(/^Importing \[█+\] 100% {2}200\/200 {2}ETA 0s$/);
    bar.stop();
    bar.stop();
    stream.write("Imported 200 item(s).\n");
    expect(terminalScreen(stream.written)).toEqual({ lines: ["Imported 200 item(s).", ""], cursorVisible: true });
  });

  it("a spinner is erased on stop (success and failure alike), and draws nothing off a terminal or under --json", () => {
    const stderr = terminal();
    const io: CliIo = { stdin: process.stdin, stdout: terminal(), stderr, env: {}, cwd: process.cwd() };
    const spinner = startSpinner(createCliContext(io, {}), "Installing @hermes/memory-sqlite");
    expect(terminalScreen(stderr.written).lines[0]).toMatch(/^[⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏] Installing @hermes\/memory-sqlite$/);
    spinner.stop();
    stderr.write("hermes-memory: npm install failed\n");
    const screen = terminalScreen(stderr.written);
    expect(screen).toEqual({ lines: ["hermes-memory: npm install failed", ""], cursorVisible: true });
    expect(screen.lines.join("\n")).not.toMatch(SPINNER_OR_BAR);

    const quiet = terminal();
    startSpinner(createCliContext({ ...io, stderr: quiet }, { json: true }), "x").stop();
    const piped = terminal();
    piped.isTTY = false;
    startSpinner(createCliContext({ ...io, stderr: piped }, {}), "x").stop();
    expect(quiet.written + piped.written).toBe("");
  });

  it("estimate the time left steadily when progress comes in bursts", () => {
    // 1,000 items at 10 items/s on average, reported as 0 or 20 items a second in turn: the time
    // left from each last second alone would swing between "never" and half the truth.
    const estimator = new EtaEstimator(0);
    const shown: number[] = [];
    let done = 0;
    for (let second = 1; second <= 60; second++) {
      done += second % 2 === 0 ? 20 : 0;
      estimator.observe(done, 1000, second * 1000);
      const left = estimator.remainingMs(second * 1000);
      if (second >= 10) shown.push(left! / 1000);
    }
    for (let i = 1; i < shown.length; i++)
      expect(Math.abs(shown[i]! - shown[i - 1]!), `second ${i + 10}: ${shown.join(", ")}`).toBeLessThan(shown[i - 1]! * 0.25);
    // It tracks the truth: 400 items left at 10 a second.
    expect(shown.at(-1)!).toBeGreaterThan(30);
    expect(shown.at(-1)!).toBeLessThan(50);
  });

  it("gives no estimate while warming up or before any progress, and rounds what it shows", () => {
    const estimator = new EtaEstimator(0);
    estimator.observe(5, 100, 500);
    expect(estimator.remainingMs(500)).toBeUndefined();
    const idle = new EtaEstimator(0);
    idle.observe(0, 100, 5000);
    expect(idle.remainingMs(5000)).toBeUndefined();
    expect([formatEta(undefined), formatEta(12_400), formatEta(754_000), formatEta(2 * 3600_000 + 125_000)]).toEqual([
      "ETA --",
      "ETA 12s",
      "ETA 12m 30s",
      "ETA 2h 2m",
    ]);
  });
});
