#!/usr/bin/env node
import { readFileSync } from "node:fs";
import path from "node:path";
import * as prompts from "@clack/prompts";
import { Command } from "commander";
import { HermesMemoryError } from "@hermes/memory-core";
import { deriveProviderName, scaffoldProvider, validateProviderName } from "./scaffold.js";

interface Options {
  name?: string;
  packageName?: string;
  description?: string;
  yes?: boolean;
}

async function main(argv: string[]): Promise<void> {
  const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
  const program = new Command("create-memory-provider")
    .description("Scaffold a Hermes memory provider package")
    .version(version)
    .argument("[directory]", "where to create the package")
    .option("--name <provider>", "provider name users select with memory.provider")
    .option("--package-name <name>", "npm package name (default: the directory name)")
    .option("--description <text>", "one-line description")
    .option("-y, --yes", "accept defaults, never prompt")
    .parse(argv);
  const options = program.opts<Options>();
  let directory = program.args[0];
  const interactive = !options.yes && process.stdin.isTTY && process.stdout.isTTY;

  if (interactive) {
    prompts.intro("Create a Hermes memory provider");
    const answers = await prompts.group(
      {
        directory: () =>
          directory
            ? Promise.resolve(directory)
            : prompts.text({ message: "Directory", placeholder: "my-provider", validate: (v) => (v ? undefined : "Required") }),
        name: ({ results }) =>
          options.name
            ? Promise.resolve(options.name)
            : prompts.text({
                message: "Provider name",
                initialValue: deriveProviderName(String(results.directory ?? directory)),
                validate: (v) => {
                  try {
                    validateProviderName(String(v));
                    return undefined;
                  } catch (error) {
                    return (error as Error).message;
                  }
                },
              }),
        description: () =>
          options.description
            ? Promise.resolve(options.description)
            : prompts.text({ message: "Description", placeholder: "What your provider remembers" }),
      },
      {
        onCancel: () => {
          prompts.cancel("Cancelled; nothing written.");
          process.exit(1);
        },
      },
    );
    directory = String(answers.directory);
    options.name = String(answers.name);
    options.description = answers.description ? String(answers.description) : undefined;
  }
  if (!directory) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: "Missing directory: npm create @hermes/memory-provider <directory> [--name <provider>]",
    });
  }
  const result = await scaffoldProvider({
    directory,
    providerName: options.name,
    packageName: options.packageName,
    description: options.description,
  });
  const rel = path.relative(process.cwd(), result.directory) || ".";
  const done = [
    `Created ${result.packageName} (provider '${result.providerName}') in ${rel}:`,
    ...result.files.map((f) => `  ${f}`),
    "",
    "Next:",
    `  cd ${rel}`,
    "  npm install",
    "  npm run build && npm test",
  ].join("\n");
  if (interactive) prompts.outro(done);
  else console.log(done);
}

main(process.argv).catch((error: unknown) => {
  if (HermesMemoryError.isInstance(error)) {
    console.error(`error: ${error.message}`);
    process.exit(1);
  }
  // Unexpected: one line; HERMES_MEMORY_DEBUG=1 adds the stack.
  const message = error instanceof Error ? error.message : String(error);
  console.error(`error: unexpected failure: ${message.split("\n")[0]}. Rerun with HERMES_MEMORY_DEBUG=1 for details and report it.`);
  if (process.env.HERMES_MEMORY_DEBUG && error instanceof Error && error.stack) console.error(error.stack);
  process.exit(2);
});
