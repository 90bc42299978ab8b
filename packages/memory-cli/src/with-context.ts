import type { Command } from "commander";
import { runWithProfile } from "@hermes/memory-core";
import { createCliContext, type CliContext, type GlobalOptions } from "./cli-context.js";
import type { CliIo } from "./cli-io.js";

/** A command action that receives the resolved `CliContext` before commander's arguments. */
export type CommandAction<A extends unknown[]> = (ctx: CliContext, ...args: A) => Promise<void>;

/**
 * Adapt a `CommandAction` to commander: builds the context from the global options of the
 * invoked command and runs the action in that home's profile scope, so every provider call a
 * command makes (`isAvailable()`, `initialize()`, `postSetup`, `getEnv()`) sees the profile's
 * `.env`. Errors propagate to `runCli`, which maps them to exit codes.
 */
export function withContext<A extends unknown[]>(io: CliIo, action: CommandAction<A>): (...args: unknown[]) => Promise<void> {
  return async (...args: unknown[]) => {
    const command = args[args.length - 1] as Command;
    const ctx = createCliContext(io, command.optsWithGlobals<GlobalOptions>());
    await runWithProfile(ctx.hermesHome, () => action(ctx, ...(args.slice(0, -1) as A)));
  };
}
