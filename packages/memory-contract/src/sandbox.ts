import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/** Path → fingerprint (`d` for a directory, `f:<size>:<mtime>` for a file). */
export type FileSnapshot = Map<string, string>;

/**
 * The temp tree one contract run works in: a fake `HOME`, a fake working directory and one fresh
 * `hermesHome` per provider profile. While entered, `HOME` and `process.cwd()` point into it, so a
 * provider writing to `~` or `./` writes into the sandbox where the kit can see it.
 */
export class Sandbox {
  readonly root: string;
  /** Stands in for the user's home directory (`HOME`, `os.homedir()`). */
  readonly home: string;
  /** Stands in for the process working directory. */
  readonly workDir: string;
  private readonly profilesDir: string;
  private profileCount = 0;
  private saved: { env: Record<string, string | undefined>; cwd: string } | undefined;
  /** False when `process.chdir` is unavailable (worker threads): cwd writes are then not caught. */
  cwdSandboxed = false;

  private constructor(root: string) {
    this.root = root;
    this.home = path.join(root, "home");
    this.workDir = path.join(root, "work");
    this.profilesDir = path.join(root, "profiles");
    for (const dir of [this.home, this.workDir, this.profilesDir]) fs.mkdirSync(dir, { recursive: true });
  }

  /** Create a sandbox under the OS temp directory. */
  static create(): Sandbox {
    // realpath: macOS and some CI runners put tmpdir behind a symlink, and paths are compared.
    return new Sandbox(fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "hermes-contract-"))));
  }

  /** A new, empty profile directory to use as `hermesHome`. */
  newHermesHome(label: string): string {
    this.profileCount += 1;
    const dir = path.join(this.profilesDir, `${this.profileCount}-${label.replace(/[^a-z0-9-]/gi, "-")}`);
    fs.mkdirSync(dir, { recursive: true });
    return dir;
  }

  /**
   * Point `HOME`/`USERPROFILE` and the working directory into the sandbox and unset
   * `HERMES_HOME`, so a provider ignoring `ctx.hermesHome` lands in the fake home. Idempotent.
   */
  enter(): void {
    if (this.saved) return;
    const keys = ["HOME", "USERPROFILE", "HERMES_HOME"];
    this.saved = { env: Object.fromEntries(keys.map((k) => [k, process.env[k]])), cwd: process.cwd() };
    process.env.HOME = this.home;
    process.env.USERPROFILE = this.home;
    delete process.env.HERMES_HOME;
    try {
      process.chdir(this.workDir);
      this.cwdSandboxed = true;
    } catch {
      // Worker threads cannot chdir; the HOME sandbox still applies.
      this.cwdSandboxed = false;
    }
  }

  /** Restore the environment and working directory saved by `enter()`. */
  leave(): void {
    if (!this.saved) return;
    for (const [key, value] of Object.entries(this.saved.env)) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
    if (this.cwdSandboxed) {
      try {
        process.chdir(this.saved.cwd);
      } catch {
        // The original directory vanished; staying in the sandbox is harmless until dispose.
      }
    }
    this.saved = undefined;
  }

  /** Fingerprint every file and directory under the sandbox except the `exclude` subtrees. */
  snapshot(exclude: readonly string[] = []): FileSnapshot {
    return snapshotTree(this.root, exclude);
  }

  /** Remove the whole sandbox (restoring the environment first). */
  dispose(): void {
    this.leave();
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}

/** Fingerprint every file and directory under `root` except the `exclude` subtrees. */
export function snapshotTree(root: string, exclude: readonly string[] = []): FileSnapshot {
  const result: FileSnapshot = new Map();
  const excluded = new Set(exclude.map((p) => path.resolve(p)));
  const walk = (dir: string): void => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (excluded.has(full)) continue;
      if (entry.isDirectory()) {
        result.set(full, "d");
        walk(full);
      } else {
        try {
          const st = fs.lstatSync(full);
          result.set(full, `f:${st.size}:${st.mtimeMs}`);
        } catch {
          // Vanished between readdir and lstat: nothing to fingerprint.
        }
      }
    }
  };
  walk(root);
  return result;
}

/** Paths added, changed or removed between two snapshots, sorted. */
export function diffSnapshots(before: FileSnapshot, after: FileSnapshot): string[] {
  const changed = new Set<string>();
  for (const [p, fp] of after) if (before.get(p) !== fp) changed.add(p);
  for (const p of before.keys()) if (!after.has(p)) changed.add(p);
  return [...changed].sort();
}

/** True when `child` is `parent` or inside it. */
export function isInside(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}
