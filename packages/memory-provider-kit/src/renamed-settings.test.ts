import { describe, expect, it } from "vitest";
import { applyRenamedSettings } from "./renamed-settings.js";

const renames = [{ from: "prefetch_chars", to: "prefetch_max_chars" }];

describe("applyRenamedSettings", () => {
  it("reads an old key as the new one and warns once per place and key", () => {
    const warnings: string[] = [];
    const warn = (message: string) => warnings.push(message);
    const section = { prefetch_chars: 900, hybrid: true };
    expect(applyRenamedSettings(section, renames, { where: "memory.x in /a/config.yaml", keys: "snake", warn })).toEqual({
      prefetch_max_chars: 900,
      hybrid: true,
    });
    expect(section).toEqual({ prefetch_chars: 900, hybrid: true });
    applyRenamedSettings(section, renames, { where: "memory.x in /a/config.yaml", keys: "snake", warn });
    expect(warnings).toEqual([
      "memory.x in /a/config.yaml: prefetch_chars is the old name of prefetch_max_chars and is read as prefetch_max_chars; rename it to prefetch_max_chars.",
    ]);
    applyRenamedSettings(section, renames, { where: "memory.x in /b/config.yaml", keys: "snake", warn });
    expect(warnings).toHaveLength(2);
  });

  it("renames camelCase options, and returns the same object when no old key is given", () => {
    expect(applyRenamedSettings({ prefetchChars: 10 }, renames, { where: "options", keys: "camel" })).toEqual({ prefetchMaxChars: 10 });
    const current = { prefetch_max_chars: 5, prefetch_chars: undefined };
    expect(applyRenamedSettings(current, renames, { where: "s", keys: "snake" })).toBe(current);
  });

  it("refuses the old and the new key together with INVALID_CONFIG naming both", () => {
    expect(() => applyRenamedSettings({ prefetch_chars: 1, prefetch_max_chars: 2 }, renames, { where: "memory.x", keys: "snake" })).toThrow(
      expect.objectContaining({
        code: "INVALID_CONFIG",
        message: expect.stringMatching(/memory\.x sets both prefetch_chars and prefetch_max_chars.*Remove prefetch_chars/),
      }),
    );
  });
});
