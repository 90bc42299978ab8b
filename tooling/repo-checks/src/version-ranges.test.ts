/**
 * The workspace's version ranges (see `version-ranges.ts`) hold at every commit, each rule fires on
 * synthetic manifests so a broken checker cannot pass silently, and the fixer that
 * `pnpm version-packages` runs after `changeset version` leaves manifests the checker accepts.
 */
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { checkWorkspaceRanges, effectiveRange, peerRange, raisePeerFloors, type RangeManifest } from "./version-ranges.js";
import { readWorkspaceManifests } from "./workspace-manifests.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));

const format = (problems: ReturnType<typeof checkWorkspaceRanges>) =>
  problems.map((p) => `${p.package} ${p.field} ${p.dependency} ${p.detail}`).join("\n");

describe("version ranges between workspace packages", () => {
  it("every range includes the current version, and peer ranges run from it to the next major", () => {
    const manifests = readWorkspaceManifests(root).map((m) => m.manifest);
    expect(manifests.length).toBeGreaterThan(8);
    const problems = checkWorkspaceRanges(manifests);
    expect(problems, format(problems)).toEqual([]);
  });

  it("peer ranges admit the next minor and stop below the next major, before and after 1.0.0", () => {
    expect(peerRange("0.1.0")).toBe(">=0.1.0 <1.0.0");
    expect(peerRange("0.4.2")).toBe(">=0.4.2 <1.0.0");
    expect(peerRange("1.3.0")).toBe("^1.3.0");
    expect(peerRange("0.0.0-snapshot-20260101")).toBe("0.0.0-snapshot-20260101");
  });

  it("reads workspace: ranges the way pnpm publishes them", () => {
    expect(effectiveRange("workspace:^", "0.3.1")).toBe("^0.3.1");
    expect(effectiveRange("workspace:~", "0.3.1")).toBe("~0.3.1");
    expect(effectiveRange("workspace:*", "0.3.1")).toBe("0.3.1");
    expect(effectiveRange("workspace:>=0.2.0 <1.0.0", "0.3.1")).toBe(">=0.2.0 <1.0.0");
    expect(effectiveRange("^1.0.0", "0.3.1")).toBe("^1.0.0");
  });

  describe("fires on", () => {
    const core: RangeManifest = { name: "@x/core", version: "0.1.0" };
    const dependent = (field: "dependencies" | "peerDependencies" | "devDependencies", range: string): RangeManifest => ({
      name: "@x/provider",
      version: "0.1.0",
      [field]: { "@x/core": range },
    });

    it("a peer range that excludes the current version (0.1.0 against ^0.2.0: npm's ERESOLVE)", () => {
      const [problem, ...rest] = checkWorkspaceRanges([core, dependent("peerDependencies", "^0.2.0")]);
      expect(rest).toEqual([]);
      expect(problem).toMatchObject({ package: "@x/provider", field: "peerDependencies", dependency: "@x/core", range: "^0.2.0" });
      expect(problem!.detail).toMatch(/does not include @x\/core's current version 0\.1\.0/);
    });

    it("a dependency or dev dependency range that excludes the current version", () => {
      expect(checkWorkspaceRanges([core, dependent("dependencies", "^0.2.0")])).toHaveLength(1);
      expect(checkWorkspaceRanges([core, dependent("devDependencies", "workspace:^0.2.0")])).toHaveLength(1);
    });

    it("a pre-1.0 caret peer range: the next minor would force a major of the dependent", () => {
      const [problem] = checkWorkspaceRanges([core, dependent("peerDependencies", "^0.1.0")]);
      expect(problem!.detail).toMatch(/is not ">=0\.1\.0 <1\.0\.0"/);
    });

    it("a peer range without an upper bound (what changesets writes after a major leaves the range)", () => {
      const [problem] = checkWorkspaceRanges([{ ...core, version: "1.0.0" }, dependent("peerDependencies", ">=1.0.0")]);
      expect(problem!.detail).toMatch(/is not "\^1\.0\.0"/);
    });

    it("a peer floor below the current version (a release that left the floor behind)", () => {
      const [problem] = checkWorkspaceRanges([{ ...core, version: "0.2.0" }, dependent("peerDependencies", ">=0.1.0 <1.0.0")]);
      expect(problem!.detail).toMatch(/is not ">=0\.2\.0 <1\.0\.0".*pnpm version-packages/);
    });

    it("a range that is not semver", () => {
      const [problem] = checkWorkspaceRanges([core, dependent("dependencies", "latest-and-greatest")]);
      expect(problem!.detail).toMatch(/not a semver range/);
    });

    it("but accepts the peer range rule, workspace ranges and packages outside the workspace", () => {
      expect(checkWorkspaceRanges([core, dependent("peerDependencies", ">=0.1.0 <1.0.0")])).toEqual([]);
      expect(checkWorkspaceRanges([{ ...core, version: "1.4.2" }, dependent("peerDependencies", "^1.4.2")])).toEqual([]);
      expect(
        checkWorkspaceRanges([
          core,
          dependent("dependencies", "workspace:^"),
          { name: "other", version: "1.0.0", peerDependencies: { react: "^19" } },
        ]),
      ).toEqual([]);
      // A private package is never published, so only the current-version rule applies to it.
      expect(checkWorkspaceRanges([{ ...core, private: true }, dependent("peerDependencies", "0.1.0")])).toEqual([]);
    });
  });

  it("raisePeerFloors turns what changesets leaves after a minor, a major and a snapshot into accepted ranges", () => {
    const provider = (range: string): RangeManifest => ({
      name: "@x/provider",
      version: "0.2.0",
      peerDependencies: { "@x/core": range, ai: "^6.0.0" },
    });
    for (const [coreVersion, left, expected] of [
      ["0.2.0", ">=0.1.0 <1.0.0", ">=0.2.0 <1.0.0"],
      ["1.0.0", ">=1.0.0", "^1.0.0"],
      ["0.0.0-snapshot-1", "0.0.0-snapshot-1", "0.0.0-snapshot-1"],
    ] as const) {
      const manifests = [{ name: "@x/core", version: coreVersion }, provider(left)];
      expect(raisePeerFloors(manifests)).toEqual(left === expected ? [] : ["@x/provider"]);
      expect(manifests[1]!.peerDependencies).toEqual({ "@x/core": expected, ai: "^6.0.0" });
      expect(checkWorkspaceRanges(manifests)).toEqual([]);
    }
  });
});
