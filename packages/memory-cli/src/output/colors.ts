import pc from "picocolors";
import type { CliIo } from "../cli-io.js";

/** The picocolors formatter set the CLI uses (all identity functions when colour is off). */
export type Colors = ReturnType<typeof pc.createColors>;

/**
 * Whether to colour output: off with `--no-color`, `NO_COLOR` (any non-empty value) or when stdout
 * is not a terminal; `FORCE_COLOR` (non-zero) turns it on for pipes. `--no-color` always wins.
 */
export function colorEnabled(io: CliIo, flag: boolean): boolean {
  if (!flag) return false;
  if (io.env.NO_COLOR !== undefined && io.env.NO_COLOR !== "") return false;
  const force = io.env.FORCE_COLOR;
  if (force !== undefined && force !== "" && force !== "0" && force !== "false") return true;
  return io.stdout.isTTY === true;
}

/** Build the formatter set for the given decision. */
export function createColors(enabled: boolean): Colors {
  return pc.createColors(enabled);
}
