import type { CliIo } from "../cli-io.js";
import type { Colors } from "./colors.js";

/**
 * Writes command output. Human text goes to stdout unless `--json` is on, in which case only the
 * single JSON document a command produces reaches stdout (warnings still go to stderr), so
 * `hermes-memory … --json | jq` always parses.
 */
export class Printer {
  constructor(
    private readonly io: CliIo,
    readonly json: boolean,
    readonly colors: Colors,
  ) {}

  /** A line of human output (suppressed under `--json`). */
  line(text = ""): void {
    if (!this.json) this.io.stdout.write(`${text}\n`);
  }

  /** A one-line warning on stderr (shown also under `--json`). */
  warn(text: string): void {
    this.io.stderr.write(`${this.colors.yellow("warning:")} ${oneLine(text)}\n`);
  }

  /** The command's JSON result (only under `--json`). */
  data(value: unknown): void {
    if (this.json) this.io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  }

  /** Human output or JSON: prints `render()` lines normally and `value` under `--json`. */
  result(value: unknown, render: () => void): void {
    if (this.json) this.data(value);
    else render();
  }
}

/** Collapse a possibly multi-line message into one line (user errors are one line by contract). */
export function oneLine(text: string): string {
  return text.replace(/\s*\r?\n\s*/g, " ").trim();
}
