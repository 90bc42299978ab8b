import fs from "node:fs";
import path from "node:path";
import type { Command } from "commander";
import type { ProviderCliContext } from "@hermes/memory-core";

/** Adds `hermes-memory {{providerName}} …` subcommands (shown only while this provider is active). */
export function registerCli(command: Command, context: ProviderCliContext): void {
  // Write through the host's streams when it passes them (in-process hosts and tests capture them).
  const stdout = context.io?.stdout ?? ((text: string) => void process.stdout.write(text));
  command
    .command("stats")
    .description("Count the stored notes")
    .option("--json", "print JSON")
    .action((options: { json?: boolean }) => {
      const file = path.join(context.hermesHome, "{{providerName}}", "notes.jsonl");
      const count = fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").filter(Boolean).length : 0;
      stdout(`${options.json ? JSON.stringify({ notes: count, file }) : `${count} notes in ${file}`}\n`);
    });
}
