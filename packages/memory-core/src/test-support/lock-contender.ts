// A process taking `withFileLock` on a file, for the lock tests (run with tsx):
//   lock-contender.ts <file> <timeoutMs> <staleMs> [mark]
// Prints "HELD" once inside the lock and stays inside until a line "RELEASE" arrives on stdin, then
// prints "RELEASED". With `mark` it also creates `<file>.inside` exclusively while inside, and prints
// "HELD CLASH" instead when that file is already there (another holder is inside at the same time).
// A lock it cannot take prints "FAILED <code> <message>". The lock mode follows HERMES_FILE_LOCK.
import fs from "node:fs";
import readline from "node:readline";
import { withFileLock } from "../fs.js";

const [file, timeoutMs, staleMs, mark] = process.argv.slice(2);
const marker = `${file!}.inside`;
const lines = readline.createInterface({ input: process.stdin });
const released = new Promise<void>((resolve) => lines.on("line", (line) => line === "RELEASE" && resolve()));
try {
  await withFileLock(
    file!,
    async () => {
      let clash = false;
      if (mark === "mark") {
        try {
          fs.writeFileSync(marker, String(process.pid), { flag: "wx" });
        } catch {
          clash = true;
        }
      }
      process.stdout.write(clash ? "HELD CLASH\n" : "HELD\n");
      await released;
      if (mark === "mark" && !clash) fs.rmSync(marker, { force: true });
    },
    { timeoutMs: Number(timeoutMs), staleMs: Number(staleMs) },
  );
  process.stdout.write("RELEASED\n");
} catch (error) {
  process.stdout.write(`FAILED ${String((error as { code?: unknown }).code)} ${(error as Error).message}\n`);
}
lines.close();
