#!/usr/bin/env node
import { detachedCallCount } from "@hermes/memory-core";
import { runCli } from "./program.js";

// `hermes-memory … | head` closes the pipe early; that is not an error worth a stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on("error", (error: NodeJS.ErrnoException) => {
    if (error.code === "EPIPE") process.exit(process.exitCode ?? 0);
    throw error;
  });
}

const code = await runCli(process.argv.slice(2));
// A provider command may report failure through process.exitCode; keep the worse of the two.
const final = code !== 0 ? code : Number(process.exitCode ?? 0);
// exitCode (not exit) lets piped stdout drain. The unref'd timer only fires if a provider left a
// handle open (a writer, a socket), so a finished command never hangs; it waits for output still
// queued for a slow reader before exiting.
process.exitCode = final;
const exitWhenDrained = (): void => {
  if (process.stdout.writableLength > 0 || process.stderr.writableLength > 0) {
    setTimeout(exitWhenDrained, 200).unref();
    return;
  }
  process.exit(final);
};
// A provider call that timed out (a hung import, initialize or shutdown) is still pending and may
// hold the loop open, and a pending import can never finish: exit as soon as output is written.
if (detachedCallCount() > 0) exitWhenDrained();
else setTimeout(exitWhenDrained, 3000).unref();
