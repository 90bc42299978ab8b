import fs from "node:fs";
import { writeFileSync } from "node:fs";
import fsp from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { FsWriteWatch } from "./fs-write-watch.js";
import { writesOutside } from "./write-detection.js";
import { providerCallScope } from "./provider-call-scope.js";
import { Sandbox } from "./sandbox.js";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe("FsWriteWatch", () => {
  it("records writes made in scope, through the fs object, ESM named imports and promises", async () => {
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "contract-watch-")));
    dirs.push(dir);
    const watch = new FsWriteWatch(() => providerCallScope.getStore()?.label === "p");
    watch.start();
    try {
      fs.writeFileSync(path.join(dir, "outside-scope.txt"), "x");
      await providerCallScope.run({ label: "p" }, async () => {
        writeFileSync(path.join(dir, "named.txt"), "x");
        fs.mkdirSync(path.join(dir, "sub"));
        await fsp.writeFile(path.join(dir, "sub", "promise.txt"), "x");
        fs.closeSync(fs.openSync(path.join(dir, "opened.txt"), "w"));
        fs.readFileSync(path.join(dir, "named.txt"));
        fs.closeSync(fs.openSync(path.join(dir, "named.txt"), "r"));
      });
    } finally {
      watch.stop();
    }
    expect([...watch.written].sort()).toEqual(
      ["named.txt", "opened.txt", "sub", path.join("sub", "promise.txt")].map((p) => path.join(dir, p)).sort(),
    );
    expect(fs.writeFileSync.name).toBe("writeFileSync");
  });

  it("flags fs writes outside hermesHome unless they are plain temp files", () => {
    const sandbox = Sandbox.create();
    try {
      const home = sandbox.newHermesHome("p");
      const tmp = fs.realpathSync(os.tmpdir());
      expect(
        writesOutside(
          sandbox,
          home,
          [],
          [path.join(home, "db.sqlite"), path.join(tmp, "other-tool.tmp"), "/var/lib/provider/cache", path.join(sandbox.home, ".x")],
        ),
      ).toEqual(["/var/lib/provider/cache", path.join(sandbox.home, ".x")].sort());
    } finally {
      sandbox.dispose();
    }
  });
});
