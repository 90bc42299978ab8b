import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { CONTRACT_CLAUSES, CONTRACT_GROUPS, getClause } from "./clauses.js";

describe("the clause catalogue", () => {
  it("has unique ids numbered per group in order", () => {
    const ids = CONTRACT_CLAUSES.map((c) => c.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const group of CONTRACT_GROUPS) {
      const inGroup = CONTRACT_CLAUSES.filter((c) => c.group === group).map((c) => c.id);
      expect(inGroup.length, group).toBeGreaterThan(0);
      expect(inGroup).toEqual(inGroup.map((_, i) => `C-${group}-${i + 1}`));
    }
    expect(getClause("C-TOOLS-2").title).toBe("unknown tool returns an error string");
    expect(() => getClause("C-NOPE-1")).toThrow();
  });

  it("is documented in the README with every hint", () => {
    const readme = fs.readFileSync(path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "README.md"), "utf8");
    for (const clause of CONTRACT_CLAUSES) {
      expect(readme, clause.id).toContain(`\`${clause.id}\``);
      expect(readme, clause.id).toContain(clause.hint.replace(/\|/g, "\\|"));
    }
  });
});
