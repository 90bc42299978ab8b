import { performance } from "node:perf_hooks";
import type { ProviderCliProgress } from "@hermes/memory-core";
import type { CliContext } from "../cli-context.js";
import { EtaEstimator, formatEta } from "./eta.js";

/** A terminal stream progress is drawn on. */
export type ProgressStream = NodeJS.WritableStream & { isTTY?: boolean; columns?: number };

const HIDE_CURSOR = "\u001b[?25l";
const SHOW_CURSOR = "\u001b[?25h";
/** Back to the start of the line and erase it. */
const CLEAR_LINE = "\r\u001b[2K";
const SPINNER_FRAMES = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const SPINNER_FRAME_MS = 80;
/** A bar is redrawn at most this often; a burst of updates costs one redraw. */
const BAR_REDRAW_MS = 100;
/** Cells of a bar at most; fewer on a narrow terminal, none below `MIN_BAR_CELLS`. */
const MAX_BAR_CELLS = 30;
const MIN_BAR_CELLS = 10;

/**
 * One line of stderr redrawn in place. Text is cut to the terminal's width, because a line that
 * wrapped could not be erased by returning to its start. `clear()` erases the line and shows the
 * cursor again, so a finished or failed operation leaves nothing behind — also when the process
 * exits while the line is drawn.
 */
class StatusLine {
  private shown = false;
  private readonly restore = (): void => this.clear();

  constructor(private readonly stream: ProgressStream) {}

  draw(text: string): void {
    const width = Math.max(20, (this.stream.columns ?? 80) - 1);
    const chars = [...text];
    const fitted = chars.length > width ? `${chars.slice(0, width - 1).join("")}…` : text;
    if (!this.shown) {
      this.shown = true;
      process.once("exit", this.restore);
      this.stream.write(HIDE_CURSOR);
    }
    this.stream.write(`${CLEAR_LINE}${fitted}`);
  }

  clear(): void {
    if (!this.shown) return;
    this.shown = false;
    process.off("exit", this.restore);
    this.stream.write(`${CLEAR_LINE}${SHOW_CURSOR}`);
  }
}

/** A running spinner; `stop()` erases it (the command then prints its result or error). */
export interface SpinnerHandle {
  update(message: string): void;
  stop(): void;
}

const NO_SPINNER: SpinnerHandle = { update: () => {}, stop: () => {} };

/** Whether progress may be drawn: a terminal on both outputs, not `--json` (see `CliContext`). */
function drawsProgress(ctx: CliContext): boolean {
  return ctx.showProgress && ctx.io.stderr.isTTY === true;
}

/**
 * A spinner on stderr for an operation of unknown length (`plugins add`, `plugins remove`).
 * Nothing is drawn under `--json` or when the output is not a terminal, so logs and pipes stay
 * clean.
 */
export function startSpinner(ctx: CliContext, message: string): SpinnerHandle {
  if (!drawsProgress(ctx)) return NO_SPINNER;
  const line = new StatusLine(ctx.io.stderr);
  let text = message;
  let frame = 0;
  const draw = (): void => line.draw(`${SPINNER_FRAMES[frame++ % SPINNER_FRAMES.length]} ${text}`);
  draw();
  const timer = setInterval(draw, SPINNER_FRAME_MS);
  timer.unref();
  return {
    update(next) {
      text = next;
    },
    stop() {
      clearInterval(timer);
      line.clear();
    },
  };
}

/** The bar's text: label, cells, percent, counts and the estimate, fitted to `width` columns. */
export function renderBar(label: string, done: number, total: number, eta: string, width: number): string {
  const share = total > 0 ? Math.min(1, Math.max(0, done / total)) : 0;
  const tail = ` ${String(Math.floor(share * 100)).padStart(3)}%  ${done.toLocaleString("en-US")}/${total.toLocaleString("en-US")}  ${eta}`;
  const cells = Math.min(MAX_BAR_CELLS, width - [...label].length - tail.length - 3);
  if (cells < MIN_BAR_CELLS) return `${label}${tail}`;
  const filled = Math.floor(share * cells);
  return `${label} [${"█".repeat(filled)}${"░".repeat(cells - filled)}]${tail}`;
}

/**
 * A progress bar on stderr for `done` of `total` items (an import, a migration, a reindex): percent,
 * counts and a smoothed estimate of the time left (`EtaEstimator`). Redrawn at most every 100 ms
 * and at completion; `stop()` erases it. Hosts hand it to provider commands as
 * `ProviderCliIo.progress`. Nothing is drawn where a spinner would not be.
 */
export function startProgressBar(ctx: CliContext, label: string): ProviderCliProgress {
  if (!drawsProgress(ctx)) return { update: () => {}, stop: () => {} };
  return drawProgressBar(ctx.io.stderr, label);
}

/** `startProgressBar` on `stream`, which the caller has found to be a terminal. */
export function drawProgressBar(stream: ProgressStream, label: string): ProviderCliProgress {
  const line = new StatusLine(stream);
  let estimator: EtaEstimator | undefined;
  let drawnAt = Number.NEGATIVE_INFINITY;
  return {
    update(done, total) {
      const now = performance.now();
      estimator ??= new EtaEstimator(now, done);
      estimator.observe(done, total, now);
      if (now - drawnAt < BAR_REDRAW_MS && done < total) return;
      drawnAt = now;
      line.draw(renderBar(label, done, total, formatEta(estimator.remainingMs(now)), Math.max(20, (stream.columns ?? 80) - 1)));
    },
    stop() {
      line.clear();
    },
  };
}
