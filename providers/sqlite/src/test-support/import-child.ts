// Child process for the concurrent import test: imports the JSONL file argv[3] into the profile
// argv[2] with `hermes-memory sqlite import` and sends the result to the parent.
import { importCommand } from "../commands.js";

const [home, file] = process.argv.slice(2) as [string, string];
process.send?.({ type: "started" });
importCommand({ hermesHome: home, providerName: "sqlite", io: { stdout: () => {}, stderr: () => {}, isTTY: false } }, file, { json: true })
  .then((result) => process.send?.({ type: "done", result }))
  .catch((error: unknown) => {
    process.send?.({ type: "error", message: String((error as Error)?.stack ?? error) });
    process.exitCode = 1;
  });
