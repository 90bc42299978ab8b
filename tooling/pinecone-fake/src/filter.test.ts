import { describe, expect, it } from "vitest";
import { pineconeFilterMatches as matches, type FakeMetadata } from "./filter.js";

const movie: FakeMetadata = { genre: "drama", year: 2019, rated: true, tags: ["comedy", "documentary"] };

describe("pineconeFilterMatches", () => {
  it("selects everything without a filter, and ANDs the fields of a filter object", () => {
    expect(matches(movie, undefined)).toBe(true);
    expect(matches(movie, {})).toBe(true);
    expect(matches(movie, { genre: "drama", year: 2019 })).toBe(true);
    expect(matches(movie, { genre: "drama", year: 2020 })).toBe(false);
  });

  it("compares scalars with $eq / $ne, a bare value meaning $eq", () => {
    expect(matches(movie, { genre: { $eq: "drama" } })).toBe(true);
    expect(matches(movie, { rated: true })).toBe(true);
    expect(matches(movie, { rated: false })).toBe(false);
    expect(matches(movie, { year: "2019" })).toBe(false); // no type coercion
    expect(matches(movie, { genre: { $ne: "drama" } })).toBe(false);
    expect(matches(movie, { genre: { $ne: "comedy" } })).toBe(true);
  });

  it("applies range operators to numbers only, every operator of a field having to hold", () => {
    expect(matches(movie, { year: { $gt: 2018, $lte: 2019 } })).toBe(true);
    expect(matches(movie, { year: { $gte: 2019, $lt: 2019 } })).toBe(false);
    expect(matches(movie, { genre: { $gt: 1 } })).toBe(false);
    expect(matches(movie, { tags: { $lt: 5 } })).toBe(false);
  });

  it("matches $in / $nin against a list operand", () => {
    expect(matches(movie, { genre: { $in: ["drama", "action"] } })).toBe(true);
    expect(matches(movie, { genre: { $in: ["action"] } })).toBe(false);
    expect(matches(movie, { genre: { $nin: ["action"] } })).toBe(true);
    expect(matches(movie, { genre: { $nin: ["drama"] } })).toBe(false);
  });

  it("on a list field, $eq / $in match any element, $ne / $nin require that no element matches", () => {
    expect(matches(movie, { tags: "comedy" })).toBe(true);
    expect(matches(movie, { tags: { $in: ["documentary", "drama"] } })).toBe(true);
    expect(matches(movie, { tags: "drama" })).toBe(false);
    expect(matches(movie, { tags: { $ne: "comedy" } })).toBe(false);
    expect(matches(movie, { tags: { $ne: "drama" } })).toBe(true);
    expect(matches(movie, { tags: { $nin: ["drama", "comedy"] } })).toBe(false);
  });

  it("treats a missing field as matching only $ne, $nin and $exists: false", () => {
    expect(matches(movie, { director: "x" })).toBe(false);
    expect(matches(movie, { director: { $in: ["x"] } })).toBe(false);
    expect(matches(movie, { director: { $gt: 0 } })).toBe(false);
    expect(matches(movie, { director: { $ne: "x" } })).toBe(true);
    expect(matches(movie, { director: { $nin: ["x"] } })).toBe(true);
    expect(matches(movie, { director: { $exists: false } })).toBe(true);
    expect(matches(movie, { director: { $exists: true } })).toBe(false);
    expect(matches(movie, { genre: { $exists: true } })).toBe(true);
  });

  it("combines clauses with $and / $or, nested", () => {
    expect(matches(movie, { $or: [{ genre: "action" }, { year: { $gte: 2019 } }] })).toBe(true);
    expect(matches(movie, { $or: [{ genre: "action" }, { year: { $gt: 2019 } }] })).toBe(false);
    expect(matches(movie, { $and: [{ genre: "drama" }, { $or: [{ rated: false }, { tags: "comedy" }] }] })).toBe(true);
    expect(matches(movie, { $and: [{ genre: "drama" }, { rated: false }] })).toBe(false);
  });

  it("throws on a malformed filter (the fake answers HTTP 400, as Pinecone does)", () => {
    expect(() => matches(movie, { genre: { $regex: "d.*" } })).toThrow(/unknown operator \$regex/);
    expect(() => matches(movie, { $not: { genre: "drama" } })).toThrow(/top level/);
    expect(() => matches(movie, { year: { $gt: "2018" } })).toThrow(/\$gt expects a number/);
    expect(() => matches(movie, { genre: { $in: "drama" } })).toThrow(/\$in expects a list/);
    expect(() => matches(movie, { genre: { $exists: 1 } })).toThrow(/\$exists expects a boolean/);
    expect(() => matches(movie, { $or: { genre: "drama" } })).toThrow(/\$or expects a list/);
    expect(() => matches(movie, "genre = drama")).toThrow(/must be an object/);
  });
});
