import { spawn } from "node:child_process";

/** Outcome of one npm run. */
export interface NpmResult {
  code: number;
  stdout: string;
  stderr: string;
  /** The last non-blank stderr line that looks like an error (for one-line messages). */
  lastErrorLine: string;
}

/**
 * Run the `npm` found on PATH with `args` (never through a shell, so specs are not interpreted)
 * and collect its output. Resolves with exit code 127 when npm cannot be started.
 */
export function runNpm(args: string[], options: { cwd: string; env: NodeJS.ProcessEnv }): Promise<NpmResult> {
  const command = process.platform === "win32" ? "npm.cmd" : "npm";
  return new Promise((resolve) => {
    let stdout = "";
    let stderr = "";
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", (error) => resolve({ code: 127, stdout, stderr: String(error), lastErrorLine: `cannot run npm: ${error.message}` }));
    child.on("close", (code) => {
      const lines = stderr
        .split(/\r?\n/)
        .map((l) => l.trim())
        .filter(Boolean);
      const errorLines = lines.filter((l) => /^npm (error|ERR!)/.test(l) && !/A complete log|^npm (error|ERR!)\s*$/.test(l));
      const last = (errorLines.length > 0 ? errorLines.slice(0, 2).join(" ") : lines[lines.length - 1]) ?? "";
      resolve({ code: code ?? 1, stdout, stderr, lastErrorLine: last.replace(/^npm (error|ERR!)\s*/, "") });
    });
  });
}
