import path from "node:path";
import { BuiltinMemoryStore, readConfig, type BuiltinMemoryTarget, type MemoryUsage } from "@hermes/memory-core";
import type { CliContext } from "../cli-context.js";
import { CliUsageError } from "../cli-usage-error.js";

/** One file of `memory show --json`. */
export interface ShownMemoryFile {
  target: BuiltinMemoryTarget;
  path: string;
  entries: string[];
  usage: MemoryUsage;
}

/**
 * `hermes-memory memory show [memory|user]`: the entries of MEMORY.md and/or USER.md with usage
 * against the configured limits. Read-only (no lock, no snapshot).
 */
export async function showCommand(ctx: CliContext, target: string | undefined): Promise<void> {
  if (target !== undefined && target !== "memory" && target !== "user") {
    throw new CliUsageError(`Unknown memory target '${target}'; use \`memory\` (MEMORY.md) or \`user\` (USER.md), or omit it for both.`);
  }
  const config = await readConfig(ctx.hermesHome);
  const store = new BuiltinMemoryStore({
    dir: path.join(ctx.hermesHome, "memories"),
    memoryCharLimit: config.memory.memoryCharLimit,
    userCharLimit: config.memory.userCharLimit,
  });
  const targets: BuiltinMemoryTarget[] = target ? [target] : ["memory", "user"];
  const files: ShownMemoryFile[] = await Promise.all(
    targets.map(async (t) => ({ target: t, path: store.filePath(t), entries: await store.entries(t), usage: await store.usage(t) })),
  );
  const { out } = ctx;
  const c = out.colors;
  out.result({ hermesHome: ctx.hermesHome, files }, () => {
    files.forEach((file, index) => {
      if (index > 0) out.line("");
      const over = file.usage.current > file.usage.limit;
      const usage = `${file.usage.percent}% — ${file.usage.current}/${file.usage.limit} chars`;
      out.line(
        `${c.bold(path.basename(file.path))} ${over ? c.red(`${usage} OVER BUDGET`) : usage}, ${file.entries.length} entr${file.entries.length === 1 ? "y" : "ies"}  ${c.dim(file.path)}`,
      );
      if (file.entries.length === 0) out.line(c.dim("  (empty)"));
      file.entries.forEach((entry, i) => {
        const [first = "", ...rest] = entry.split("\n");
        out.line(`  ${String(i + 1).padStart(2)}. ${first}`);
        for (const line of rest) out.line(`      ${line}`);
      });
    });
  });
}
