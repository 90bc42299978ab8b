import { describe, expect, it } from "vitest";
import {
  decodeUtf8,
  keepUnreadable,
  unreadableOriginal,
  readableJson,
  readableRow,
  readableText,
  SQLITE_JSON_MAX_DEPTH,
  tooDeepForSqlite,
  UNREADABLE_KEY,
} from "./unreadable-values.js";

/** Bytes that are not UTF-8 (and not JSON). */
const GARBAGE = Buffer.from([0xff, 0xfe, 0x00, 0x7b]);

describe("decodeUtf8 and unreadableOriginal", () => {
  it("decodes valid UTF-8 only", () => {
    expect(decodeUtf8(Buffer.from("café ☕"))).toBe("café ☕");
    expect(decodeUtf8(GARBAGE)).toBeUndefined();
    expect(decodeUtf8(new Uint8Array())).toBe("");
  });

  it("keeps text as text, UTF-8 bytes as their text and other bytes in base64", () => {
    expect(unreadableOriginal("not json")).toEqual({ text: "not json" });
    expect(unreadableOriginal(42)).toEqual({ text: "42" });
    expect(unreadableOriginal(Buffer.from('{"a":'))).toEqual({ text: '{"a":' });
    expect(unreadableOriginal(GARBAGE)).toEqual({ base64: GARBAGE.toString("base64") });
  });
});

describe("readableText", () => {
  it("gives text as it is, UTF-8 BLOBs and numbers as text, NULL as null only where nullable", () => {
    expect(readableText("hello")).toEqual({ value: "hello" });
    expect(readableText(Buffer.from("dana"))).toEqual({ value: "dana" });
    expect(readableText(7)).toEqual({ value: "7" });
    expect(readableText(12345678901234567890n)).toEqual({ value: "12345678901234567890" });
    expect(readableText(null)).toEqual({ value: "" });
    expect(readableText(undefined)).toEqual({ value: "" });
    expect(readableText(null, true)).toEqual({ value: null });
  });

  it("replaces bytes that are not UTF-8 with U+FFFD and keeps the original bytes", () => {
    const out = readableText(GARBAGE);
    expect(out.value).toBe("\uFFFD\uFFFD\u0000{");
    expect(out.kept).toEqual({ base64: GARBAGE.toString("base64") });
  });
});

describe("readableJson", () => {
  it("keeps JSON text of the shape as written and reads a UTF-8 BLOB's JSON as text", () => {
    expect(readableJson('{ "a": 1 }', "object")).toEqual({ text: '{ "a": 1 }', parsed: { a: 1 } });
    expect(readableJson('["x"]', "array")).toEqual({ text: '["x"]', parsed: ["x"] });
    expect(readableJson(Buffer.from('{ "a": [1] }'), "object")).toEqual({ text: '{"a":[1]}', parsed: { a: [1] } });
    expect(readableJson(Buffer.from('[ "x" ]'), "array")).toEqual({ text: '["x"]', parsed: ["x"] });
  });

  it("makes anything else {} or [] and keeps the original", () => {
    expect(readableJson("not json", "object")).toEqual({ text: "{}", parsed: {}, kept: { text: "not json" } });
    expect(readableJson('{"a":', "object")).toEqual({ text: "{}", parsed: {}, kept: { text: '{"a":' } });
    expect(readableJson("[1]", "object")).toEqual({ text: "{}", parsed: {}, kept: { text: "[1]" } });
    expect(readableJson("null", "object")).toEqual({ text: "{}", parsed: {}, kept: { text: "null" } });
    expect(readableJson('{"a":1}', "array")).toEqual({ text: "[]", parsed: [], kept: { text: '{"a":1}' } });
    expect(readableJson(42, "array")).toEqual({ text: "[]", parsed: [], kept: { text: "42" } });
    expect(readableJson(GARBAGE, "object")).toEqual({ text: "{}", parsed: {}, kept: { base64: GARBAGE.toString("base64") } });
    expect(readableJson(null, "array")).toEqual({ text: "[]", parsed: [], kept: { text: "null" } });
  });

  it("gives a fresh value each time", () => {
    const a = readableJson("x", "object").parsed;
    a.changed = true;
    expect(readableJson("x", "object").parsed).toEqual({});
  });
});

describe("keepUnreadable", () => {
  it("returns the same object when nothing is kept", () => {
    const metadata = { a: 1 };
    expect(keepUnreadable(metadata, {})).toBe(metadata);
  });

  it("adds kept originals by column under hermesUnreadable, next to those kept earlier", () => {
    expect(UNREADABLE_KEY).toBe("hermesUnreadable");
    const earlier = { project: "sea", hermesUnreadable: { tags: { text: "x" }, speaker: { base64: "AA==" } } };
    expect(keepUnreadable(earlier, { speaker: { text: "dana" }, content: { base64: "/w==" } })).toEqual({
      project: "sea",
      hermesUnreadable: { tags: { text: "x" }, speaker: { text: "dana" }, content: { base64: "/w==" } },
    });
    // An earlier value under the key that is not an object is replaced.
    expect(keepUnreadable({ hermesUnreadable: "odd" }, { metadata: { text: "[1]" } })).toEqual({
      hermesUnreadable: { metadata: { text: "[1]" } },
    });
    // The input is not changed.
    expect(earlier.hermesUnreadable).toEqual({ tags: { text: "x" }, speaker: { base64: "AA==" } });
  });
});

describe("tooDeepForSqlite", () => {
  it("is true only past SQLite's JSON depth limit (brackets inside strings do not count); readableJson refuses such JSON", () => {
    const nest = (n: number) => `${"[".repeat(n)}${"]".repeat(n)}`;
    expect(tooDeepForSqlite(nest(SQLITE_JSON_MAX_DEPTH))).toBe(false);
    expect(tooDeepForSqlite(nest(SQLITE_JSON_MAX_DEPTH + 1))).toBe(true);
    expect(tooDeepForSqlite(JSON.stringify({ a: "[".repeat(5000) }))).toBe(false);
    const deep = `{"a":${nest(SQLITE_JSON_MAX_DEPTH + 1)}}`;
    expect(readableJson(deep, "object")).toEqual({ text: "{}", parsed: {}, kept: { text: deep } });
  });
});

describe("readableRow", () => {
  it("reads every named column by the rule and keeps the unreadable originals in the metadata, in column order", () => {
    const row = { session_id: null, speaker: Buffer.from([0xff]), content: 7, tags: "nope", metadata: '{"a":1}' };
    const out = readableRow(row, {
      textColumns: { session_id: true, speaker: false, content: false },
      jsonColumns: { tags: "array" },
      metadataColumn: "metadata",
    });
    expect(out.text).toEqual({ session_id: null, speaker: "\uFFFD", content: "7" });
    expect(out.json).toEqual({ tags: { text: "[]", parsed: [] } });
    expect(out.metadata).toEqual({ a: 1, [UNREADABLE_KEY]: { speaker: { base64: "/w==" }, tags: { text: "nope" } } });
    expect(out.metadataText).toBe(JSON.stringify(out.metadata));
  });

  it("keeps the stored metadata text when nothing had to be kept", () => {
    const out = readableRow({ id: "x", metadata: '{ "a": 1 }' }, { textColumns: { id: false }, metadataColumn: "metadata" });
    expect(out).toEqual({ text: { id: "x" }, json: {}, metadata: { a: 1 }, metadataText: '{ "a": 1 }' });
  });
});
