import { describe, expect, it } from "vitest";
import { choiceDefaultProblems, configFieldShapeProblems, sampleConfigValues, secretEnvVarProblems } from "./config-schema-checks.js";

describe("config schema checks", () => {
  it("accepts a valid schema", () => {
    const fields = [
      { key: "api_key", secret: true, envVar: "MY_API_KEY", url: "https://example.invalid" },
      { key: "mode", default: "fast", choices: ["fast", "slow"], type: "text" },
    ];
    expect(configFieldShapeProblems(fields)).toEqual([]);
    expect(secretEnvVarProblems(fields)).toEqual([]);
    expect(choiceDefaultProblems(fields)).toEqual([]);
  });

  it("reports bad shapes, secrets without envVar and defaults outside choices", () => {
    expect(configFieldShapeProblems([{ key: "" }, { key: "a", type: "float", choices: "x" }, { key: "a" }])).toEqual([
      "field #0 has no non-empty string key",
      'field "a".type "float" is not one of text|integer|number|boolean|url',
      'field "a".choices is not a list of strings, numbers or booleans',
      'field "a" is declared twice',
    ]);
    expect(configFieldShapeProblems({})).toEqual(["getConfigSchema() did not return an array"]);
    expect(
      configFieldShapeProblems([
        { key: "b", advanced: "yes" },
        { key: "c", advanced: true },
      ]),
    ).toEqual(['field "b".advanced is not a boolean']);
    expect(
      secretEnvVarProblems([
        { key: "k", secret: true },
        { key: "t", secret: true, envVar: "BAD-NAME" },
      ]),
    ).toEqual(['secret field "k" has no envVar', 'secret field "t" has envVar "BAD-NAME", which is not a valid variable name']);
    expect(choiceDefaultProblems([{ key: "m", default: "x", choices: ["a"] }])).toHaveLength(1);
  });

  it("samples non-secret values only", () => {
    expect(
      sampleConfigValues([
        { key: "api_key", secret: true, envVar: "K" },
        { key: "mode", choices: ["a", "b"] },
        { key: "size", type: "integer", minimum: 4 },
        { key: "on", type: "boolean" },
        { key: "path", default: "x.db" },
      ]),
    ).toEqual({ mode: "a", size: 4, on: true, path: "x.db" });
  });
});
