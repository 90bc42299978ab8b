import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";

const read = (rel: string) => readFileSync(new URL(`../${rel}`, import.meta.url), "utf8");

describe("README", () => {
  it("shows examples/agent.ts verbatim, so the example in the README is the one that is typechecked", () => {
    const readme = read("README.md");
    const block = /## Example: an agent that remembers[\s\S]*?```ts\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block).toBe(read("examples/agent.ts"));
  });
});
