/**
 * Version ranges between workspace packages, as a pure checker (the test feeds it the real
 * manifests and synthetic ones) and the fixer `pnpm version-packages` runs after `changeset version`:
 * - every range one workspace package declares on another (dependencies, peer, optional and dev
 *   dependencies) includes that package's current version: otherwise the packed tarballs of one
 *   commit cannot be installed together (npm's ERESOLVE);
 * - a peer range on a published workspace package is exactly `peerRange(its current version)`:
 *   from that version up to, not including, its next major. The floor is the version the
 *   dependent was built and tested with (an older release lacks what it calls); the ceiling
 *   admits every later minor, because changesets releases a new major of every package whose peer
 *   range a release leaves (`onlyUpdatePeerDependentsWhenOutOfRange`), and before 1.0.0 a caret
 *   range would stop at the next minor. When a major does leave the range, changesets rewrites
 *   `>=a <b` to an open `>=b`, which this rule refuses.
 */
import semver from "semver";

/** The parts of a package.json the checker reads. */
export interface RangeManifest {
  name: string;
  version: string;
  private?: boolean;
  dependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

const FIELDS = ["dependencies", "peerDependencies", "optionalDependencies", "devDependencies"] as const;

export interface RangeProblem {
  /** The package declaring the range. */
  package: string;
  field: (typeof FIELDS)[number];
  dependency: string;
  range: string;
  detail: string;
}

/**
 * The peer range on a workspace package at `version`: `>=0.m.p <1.0.0` before 1.0.0, `^M.m.p`
 * from then on; a prerelease (a snapshot) is pinned exactly, as ranges do not admit prereleases.
 */
export function peerRange(version: string): string {
  if (semver.prerelease(version)) return version;
  return semver.major(version) === 0 ? `>=${version} <1.0.0` : `^${version}`;
}

/**
 * The semver range a declared range stands for, given the dependency's current version. pnpm
 * publishes `workspace:^` as `^<version>`, `workspace:~` as `~<version>` and `workspace:*` as the
 * exact version, so those always include the current version.
 */
export function effectiveRange(declared: string, currentVersion: string): string {
  if (!declared.startsWith("workspace:")) return declared;
  const rest = declared.slice("workspace:".length);
  if (rest === "*" || rest === "") return currentVersion;
  if (rest === "^" || rest === "~") return `${rest}${currentVersion}`;
  return rest;
}

/** Every range problem between the given workspace packages. */
export function checkWorkspaceRanges(manifests: RangeManifest[]): RangeProblem[] {
  const byName = new Map(manifests.map((m) => [m.name, m]));
  const problems: RangeProblem[] = [];
  for (const m of manifests) {
    for (const field of FIELDS) {
      for (const [dependency, declared] of Object.entries(m[field] ?? {})) {
        const target = byName.get(dependency);
        if (!target) continue;
        const range = effectiveRange(declared, target.version);
        const problem = (detail: string) => problems.push({ package: m.name, field, dependency, range: declared, detail });
        if (semver.validRange(range) === null) {
          problem(`"${declared}" is not a semver range`);
        } else if (!semver.satisfies(target.version, range)) {
          problem(
            `"${declared}" does not include ${dependency}'s current version ${target.version}: the packed tarballs cannot be installed together`,
          );
        } else if (field === "peerDependencies" && !target.private && declared !== peerRange(target.version)) {
          problem(
            `"${declared}" is not "${peerRange(target.version)}" (from ${dependency}'s current version to its next major; a pre-1.0 caret range would make each minor of ${dependency} a major of ${m.name}): run \`pnpm version-packages\`, not bare \`changeset version\`, or write it`,
          );
        }
      }
    }
  }
  return problems;
}

/**
 * Set every peer range on a published workspace package to `peerRange(its current version)`.
 * Returns the names of the packages whose manifest changed (edited in place).
 */
export function raisePeerFloors(manifests: RangeManifest[]): string[] {
  const byName = new Map(manifests.map((m) => [m.name, m]));
  const changed: string[] = [];
  for (const m of manifests) {
    for (const [dependency, declared] of Object.entries(m.peerDependencies ?? {})) {
      const target = byName.get(dependency);
      if (!target || target.private || declared === peerRange(target.version)) continue;
      m.peerDependencies![dependency] = peerRange(target.version);
      if (!changed.includes(m.name)) changed.push(m.name);
    }
  }
  return changed;
}
