import fs from "node:fs";
import { syncBuiltinESMExports } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

type Owner = Record<string, unknown>;

// Functions whose first path argument is written to (renames/copies/links: the second one).
const WRITES_FIRST = ["writeFile", "appendFile", "mkdir", "truncate", "createWriteStream", "mkdtemp"];
const WRITES_SECOND = ["rename", "copyFile", "cp", "symlink", "link"];
const WRITE_FLAGS = /[wa+]/;

function toPath(value: unknown): string | undefined {
  if (typeof value === "string") return path.resolve(value);
  if (value instanceof URL && value.protocol === "file:") return fileURLToPath(value);
  if (Buffer.isBuffer(value)) return path.resolve(value.toString());
  return undefined;
}

/**
 * While started, records every path the `fs` write functions (sync, callback and promise forms,
 * ESM named imports included) are asked to write to, when `belongs()` is true at the call — the
 * kit scopes it to provider calls, so the test runner's own writes are ignored. Native addons
 * (SQLite, LevelDB) write outside `fs` and are not seen; the sandbox snapshot covers those.
 */
export class FsWriteWatch {
  readonly written = new Set<string>();
  private restore: Array<() => void> = [];

  constructor(private readonly belongs: () => boolean) {}

  start(): void {
    if (this.restore.length > 0) return;
    const wrap = (owner: Owner, name: string, argIndex: number, checkFlags = false): void => {
      const original = owner[name];
      if (typeof original !== "function") return;
      const { written, belongs } = this;
      const wrapped = function (this: unknown, ...args: unknown[]) {
        if (belongs()) {
          const target = toPath(args[argIndex]);
          const flags = args[1];
          const writes =
            !checkFlags ||
            (typeof flags === "string" && WRITE_FLAGS.test(flags)) ||
            (typeof flags === "number" && (flags & (fs.constants.O_WRONLY | fs.constants.O_RDWR)) !== 0);
          if (target && writes) written.add(target);
        }
        return (original as (...a: unknown[]) => unknown).apply(this, args);
      };
      owner[name] = wrapped;
      this.restore.push(() => {
        owner[name] = original;
      });
    };
    const fsOwner = fs as unknown as Owner;
    const promises = fs.promises as unknown as Owner;
    for (const base of WRITES_FIRST) {
      wrap(fsOwner, base, 0);
      wrap(fsOwner, `${base}Sync`, 0);
      wrap(promises, base, 0);
    }
    for (const base of WRITES_SECOND) {
      wrap(fsOwner, base, 1);
      wrap(fsOwner, `${base}Sync`, 1);
      wrap(promises, base, 1);
    }
    wrap(fsOwner, "open", 0, true);
    wrap(fsOwner, "openSync", 0, true);
    wrap(promises, "open", 0, true);
    syncBuiltinESMExports();
  }

  stop(): void {
    for (const undo of this.restore.reverse()) undo();
    this.restore = [];
    syncBuiltinESMExports();
  }
}
