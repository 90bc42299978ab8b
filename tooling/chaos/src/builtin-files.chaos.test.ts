/**
 * MEMORY.md / USER.md as the Python agent sees them: files written with CRLF (Windows, editors),
 * entries that mention `§`, and our writes read back by Python's own reader.
 */
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { BuiltinMemoryStore } from "@hermes/memory-core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { python3Unavailable } from "./proc.js";
import { FIXTURES } from "./support.js";

const pythonReader = path.join(FIXTURES, "python-agent-reader.py");
const unavailable = python3Unavailable();

let dir: string;
beforeEach(() => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "hermes-builtin-chaos-")));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

function pythonEntries(file: string): string[] {
  const result = spawnSync("python3", [pythonReader, file], { encoding: "utf8" });
  expect(result.stderr).toBe("");
  return JSON.parse(result.stdout) as string[];
}

describe("files shared with the Python agent", () => {
  const entries = [
    "Prefers metric units",
    "Deploys with:\nmake release\nthen tags",
    "Lives in Zürich 🏔",
    "Uses § 4 of the style guide",
    "Works 9–5 CET",
  ];

  it.for([
    ["CRLF", "\r\n"],
    ["lone CR", "\r"],
  ] as const)("a %s MEMORY.md parses as Python parses it; removing one entry keeps the others", async ([, eol], ctx) => {
    if (unavailable) ctx.skip(`needs python3: ${unavailable}`);
    const file = path.join(dir, "MEMORY.md");
    fs.writeFileSync(file, entries.join("\n§\n").replace(/\n/g, eol));
    expect(pythonEntries(file)).toEqual(entries);
    const store = new BuiltinMemoryStore({ dir });
    expect(await store.entries("memory")).toEqual(entries);
    expect(await store.remove("memory", "Zürich")).toMatchObject({ success: true, entry_count: 4 });
    const left = entries.filter((e) => !e.includes("Zürich"));
    expect(await store.entries("memory")).toEqual(left);
    expect(pythonEntries(file)).toEqual(left);
  });

  it("every entry we accept reads back in Python as the same single entry; delimiter lines are refused", async (ctx) => {
    if (unavailable) ctx.skip(`needs python3: ${unavailable}`);
    const store = new BuiltinMemoryStore({ dir });
    const accepted = ["§ at the start", "inline § sign", "ends with §", "two\nlines", "windows\r\nlines"];
    for (const content of accepted) expect(await store.add("memory", content)).toMatchObject({ success: true });
    const refused = ["a\n§\nb", "a\r\n§\r\nb", "a\r§\rb", "trailing\n§", "§\nleading"];
    for (const content of refused) expect(await store.add("memory", content)).toMatchObject({ success: false });
    const expected = accepted.map((e) => e.replace(/\r\n/g, "\n"));
    expect(pythonEntries(path.join(dir, "MEMORY.md"))).toEqual(expected);
    for (const content of expected) expect(await store.remove("memory", content)).toMatchObject({ success: true });
    expect(pythonEntries(path.join(dir, "MEMORY.md"))).toEqual([]);
  });
});
