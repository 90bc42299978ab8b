/** Where a provider was found. Earlier sources win over later ones (see `discoverMemoryProviders`). */
export type ProviderSource = "bundled" | "user" | "project" | "package";

/** A provider found on disk. Nothing of it has been imported. */
export interface DiscoveredProvider {
  /** Provider name (what `memory.provider` selects). */
  name: string;
  source: ProviderSource;
  /** The provider folder, or the (real, symlink-resolved) package directory. */
  dir: string;
  /** Absolute path of the module `loadMemoryProvider` imports. */
  entry: string;
  /** `plugin.yaml` `version` or the package version; `null` when not declared. */
  version: string | null;
  description: string;
  /** Informational list of hooks the provider implements (from the manifest). */
  hooks: string[];
  /** Absolute path of the CLI module exporting `registerCli`, or `null`. */
  cli: string | null;
  /** npm package name for `package` providers, else `null`. */
  packageName: string | null;
  /** The manifest's offer to run the provider in a worker thread (`isolation`), when it makes one. */
  isolation?: "inline" | "worker";
}

/** Something discovery could not accept. Discovery records it and carries on; it never throws. */
export interface DiscoveryProblem {
  source: ProviderSource;
  /** The file or folder at fault. */
  location: string;
  /** Stable code: INVALID_MANIFEST, INVALID_NAME, ENTRY_OUTSIDE_PACKAGE, MISSING_ENTRY, UNREADABLE_DIRECTORY. */
  code: DiscoveryProblemCode;
  message: string;
  /** What the user or provider author should do about it. */
  remedy: string;
  /** The provider name the manifest declared, when it could be read. */
  name?: string;
}

/** Why discovery refused a provider it found (`DiscoveryProblem.code`). */
export type DiscoveryProblemCode =
  "INVALID_MANIFEST" | "INVALID_NAME" | "ENTRY_OUTSIDE_PACKAGE" | "MISSING_ENTRY" | "UNREADABLE_DIRECTORY" | (string & {});

/** One location discovery looked at (used in "not found" messages and `plugins list`). */
export interface SearchedLocation {
  source: ProviderSource;
  location: string;
  /** False when the location was skipped (project plugins without the opt-in). */
  enabled: boolean;
}

/** What `discoverMemoryProviders` found, refused and searched. */
export interface DiscoveryResult {
  /** Providers in precedence order (bundled, user, project, package); names are unique. */
  providers: DiscoveredProvider[];
  /** Providers hidden by an earlier one with the same name. */
  shadowed: Array<{ provider: DiscoveredProvider; shadowedBy: DiscoveredProvider }>;
  problems: DiscoveryProblem[];
  /** Every location searched, in precedence order. */
  searched: SearchedLocation[];
}

/** Where and how `discoverMemoryProviders` (and the loader, which extends these options) look. */
export interface DiscoveryOptions {
  /** Profile home; default: the active profile (`getHermesHome()`). */
  hermesHome?: string;
  /** Working directory for project plugins and the default package root; default `process.cwd()`. */
  cwd?: string;
  /** Folder of providers shipped with the host (highest precedence). */
  bundledDir?: string;
  /**
   * Package roots whose direct dependencies are checked for `hermesMemoryProvider` (a root that
   * is a `node_modules` folder: every package installed in it). Replaces the default — the nearest
   * package.json at or above `cwd`, then `$HERMES_HOME` when it has a package.json, then the
   * installation the host runs from (see `hostDir`); use `defaultPackageRoots()` to extend it.
   */
  packageRoots?: string[];
  /**
   * A file or folder of the host program: providers installed beside it are found (the outermost
   * `node_modules` on its path: the dependencies of the package.json next to it, or every package
   * in a global prefix). Default: this copy of `@hermes/memory-core`, which is installed with the
   * host (`npm install -g @hermes/memory-cli` puts it inside the CLI's global folder).
   */
  hostDir?: string;
  /** Scan `<cwd>/.hermes/plugins`; default: `HERMES_ENABLE_PROJECT_PLUGINS` is 1/true/yes/on. */
  enableProjectPlugins?: boolean;
  /**
   * Environment used for `HERMES_ENABLE_PROJECT_PLUGINS` and for npm's global prefix in the install
   * commands problems name (`npm_config_prefix`, `PREFIX`); default `process.env`.
   */
  env?: NodeJS.ProcessEnv;
}
