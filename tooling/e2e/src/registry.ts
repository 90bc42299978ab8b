import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";

const VERDACCIO_VERSION = "6.8.0"; // the last Verdaccio whose engines allow Node 20

export interface LocalRegistry {
  url: string;
  port: number;
  /** An npmrc with a dummy token (Verdaccio allows anonymous publish, npm still wants a token). */
  npmrc: string;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}`);
}

/**
 * Start Verdaccio on 127.0.0.1 with a free port, storage in `workDir`, no uplinks (nothing leaves the
 * machine) and anonymous publish. Verdaccio itself is installed with npm into a cache directory.
 */
export async function startRegistry(workDir: string): Promise<LocalRegistry> {
  const installDir = path.join(os.tmpdir(), `hermes-e2e-verdaccio-${VERDACCIO_VERSION}`);
  const bin = path.join(installDir, "node_modules/verdaccio/bin/verdaccio");
  if (!fs.existsSync(bin)) {
    const r = spawnSync(
      "npm",
      ["install", "--prefix", installDir, "--no-save", "--no-audit", "--no-fund", `verdaccio@${VERDACCIO_VERSION}`],
      { encoding: "utf8" },
    );
    if (r.status !== 0) throw new Error(`Installing verdaccio failed:\n${r.stdout}\n${r.stderr}`);
  }
  const port = await freePort();
  const configDir = path.join(workDir, "verdaccio");
  fs.mkdirSync(configDir, { recursive: true });
  fs.writeFileSync(
    path.join(configDir, "config.yaml"),
    [
      "# Loopback-only test registry: no uplinks (never proxies), anonymous publish.",
      "storage: ./storage",
      "auth:",
      "  htpasswd: { file: ./htpasswd, max_users: -1 }",
      "uplinks: {}",
      "packages:",
      "  '**': { access: $all, publish: $anonymous $all, unpublish: $anonymous $all }",
      `listen: 127.0.0.1:${port}`,
      "log: { type: stdout, format: pretty, level: warn }",
      "web: { enable: false }",
      "publish: { allow_offline: true }",
      "",
    ].join("\n"),
  );
  const log = fs.openSync(path.join(configDir, "verdaccio.log"), "a");
  const child: ChildProcess = spawn(process.execPath, [bin, "--config", path.join(configDir, "config.yaml")], {
    stdio: ["ignore", log, log],
  });
  const url = `http://127.0.0.1:${port}/`;
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once("exit", r));
      child.kill("SIGTERM");
      await Promise.race([exited, new Promise((r) => setTimeout(r, 5000))]);
      if (child.exitCode === null) child.kill("SIGKILL");
    }
    fs.closeSync(log);
  };
  try {
    await waitFor(async () => (await fetch(`${url}-/ping`)).ok, 30_000, `Verdaccio on ${url}`);
  } catch (error) {
    await stop();
    throw error;
  }
  const npmrc = path.join(configDir, "npmrc");
  fs.writeFileSync(npmrc, `registry=${url}\n//127.0.0.1:${port}/:_authToken=e2e-anonymous\n`);
  return { url, port, npmrc, stop };
}
