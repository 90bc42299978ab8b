import { spinner } from "@clack/prompts";
import type { CliContext } from "../cli-context.js";

/** A running progress indicator. Every method is a no-op when progress is suppressed. */
export interface ProgressHandle {
  update(message: string): void;
  succeed(message: string): void;
  fail(message: string): void;
}

/**
 * Start a spinner on stderr for a long operation (`plugins add`, provider import/export). Nothing
 * is drawn under `--json` or when stdout is not a terminal, so logs and pipes stay clean.
 */
export function startProgress(ctx: CliContext, message: string): ProgressHandle {
  if (!ctx.showProgress) return { update: () => {}, succeed: () => {}, fail: () => {} };
  const s = spinner({ output: ctx.io.stderr, withGuide: false });
  s.start(message);
  return {
    update: (m) => s.message(m),
    succeed: (m) => s.stop(m),
    fail: (m) => s.error(m),
  };
}
