import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { HermesMemoryError } from "@hermes/memory-core";
import { execFileSync } from "node:child_process";
import { checkJsonlSource, checkJsonlTarget, countJsonlRecords, readJsonlFile, readJsonlFileSync, writeJsonlFile } from "./jsonl.js";

const dirs: string[] = [];
const tmp = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "kit-jsonl-"));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe("JSONL files", () => {
  it("writes atomically with mode 0600, reports progress, and reads back what it wrote", async () => {
    const file = path.join(tmp(), "out.jsonl");
    const progress: Array<[number, number]> = [];
    const records = Array.from({ length: 1001 }, (_, i) => ({ i }));
    expect(writeJsonlFile(file, records, { onProgress: (d, t) => progress.push([d, t]), total: 1001 })).toBe(1001);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.readdirSync(path.dirname(file))).toEqual(["out.jsonl"]);
    expect(progress.at(-1)).toEqual([1001, 1001]);
    expect(countJsonlRecords(file)).toBe(1001);
    const sync = readJsonlFileSync(file, "x export");
    expect(sync[1000]).toEqual({ lineNo: 1001, value: { i: 1000 } });
    let n = 0;
    for await (const line of readJsonlFile(file, "x export")) if ("value" in line) n++;
    expect(n).toBe(1001);
  });

  it("reports lines that are not JSON by number and skips blank lines", () => {
    const file = path.join(tmp(), "in.jsonl");
    fs.writeFileSync(file, '{"a":1}\n\nnot json\r\n{"b":2}\n');
    expect(readJsonlFileSync(file, "x export")).toEqual([
      { lineNo: 1, value: { a: 1 } },
      { lineNo: 3, error: "not valid JSON" },
      { lineNo: 4, value: { b: 2 } },
    ]);
  });

  it("a missing file is INVALID_ARGUMENT naming the command that writes such files", async () => {
    const missing = path.join(tmp(), "missing.jsonl");
    expect(() => readJsonlFileSync(missing, "x export")).toThrow(/x export/);
    const error = await (async () => {
      try {
        for await (const _ of readJsonlFile(missing, "x export")) void _;
      } catch (e) {
        return e;
      }
    })();
    expect(HermesMemoryError.hasCode(error, "INVALID_ARGUMENT")).toBe(true);
  });

  it("skips a leading byte order mark in both readers", async () => {
    const file = path.join(tmp(), "bom.jsonl");
    fs.writeFileSync(file, '\ufeff{"content":"a"}\r\n{"content":"b"}\n');
    expect(readJsonlFileSync(file, "x export")).toEqual([
      { lineNo: 1, value: { content: "a" } },
      { lineNo: 2, value: { content: "b" } },
    ]);
    const streamed: unknown[] = [];
    for await (const line of readJsonlFile(file, "x export")) streamed.push(line);
    expect(streamed).toEqual(readJsonlFileSync(file, "x export"));
  });

  it("refuses to read a directory or a device, before reading anything, and reads a pipe", async () => {
    const dir = tmp();
    for (const bad of [dir, "/dev/zero"]) {
      expect(() => readJsonlFileSync(bad, "x export")).toThrow(
        expect.objectContaining({ code: "INVALID_ARGUMENT", message: expect.stringMatching(/x export/) }),
      );
      await expect(
        (async () => {
          for await (const _ of readJsonlFile(bad, "x export")) void _;
        })(),
      ).rejects.toMatchObject({ code: "INVALID_ARGUMENT" });
    }
    const fifo = path.join(dir, "in.fifo");
    execFileSync("mkfifo", [fifo]);
    expect(checkJsonlSource(fifo, "x export")).toEqual({ regular: false });
    expect(checkJsonlSource(__filename, "x export")).toEqual({ regular: true });
  });

  it("refuses to write over a directory, a device or a pipe, or into a missing folder, and leaves nothing behind", () => {
    const dir = tmp();
    const fifo = path.join(dir, "out.fifo");
    execFileSync("mkfifo", [fifo]);
    for (const bad of [dir, fifo, "/dev/null", path.join(dir, "missing", "out.jsonl")]) {
      expect(() => writeJsonlFile(bad, [{ a: 1 }])).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
      expect(() => checkJsonlTarget(bad)).toThrow(expect.objectContaining({ code: "INVALID_ARGUMENT" }));
    }
    expect(fs.statSync(fifo).isFIFO()).toBe(true);
    expect(fs.readdirSync(dir)).toEqual(["out.fifo"]);
    expect(fs.readdirSync(path.dirname(dir)).filter((f) => f.startsWith(path.basename(dir)) && f.endsWith(".tmp"))).toEqual([]);
  });

  it("an error thrown by the records is passed on as it is, and the target and no temporary file are left", () => {
    const dir = tmp();
    const file = path.join(dir, "out.jsonl");
    fs.writeFileSync(file, "before\n");
    function* failing() {
      yield { a: 1 };
      throw new Error("database went away");
    }
    expect(() => writeJsonlFile(file, failing())).toThrow("database went away");
    expect(fs.readFileSync(file, "utf8")).toBe("before\n");
    expect(fs.readdirSync(dir)).toEqual(["out.jsonl"]);
  });

  it("exports to a file whose name is as long as the file system allows: the temporary file's name does not grow from it", () => {
    const dir = tmp();
    for (const name of [`${"a".repeat(249)}.jsonl`, `${"é".repeat(124)}.jsonl`]) {
      expect(Buffer.byteLength(name)).toBeGreaterThan(250);
      const file = path.join(dir, name);
      expect(writeJsonlFile(file, [{ a: 1 }])).toBe(1);
      expect(readJsonlFileSync(file, "x export")).toEqual([{ lineNo: 1, value: { a: 1 } }]);
    }
    expect(fs.readdirSync(dir)).toHaveLength(2);
  });
});
