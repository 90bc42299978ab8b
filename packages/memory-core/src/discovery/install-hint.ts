/**
 * The install command a message names for a provider package: the one that puts it where this
 * host's discovery finds it. A global CLI finds packages installed globally beside it, a project's
 * host finds the project's dependencies, and `hermes-memory plugins add` (into `$HERMES_HOME`)
 * works for both, so a hint never sends a user of a global CLI to `npm install` in some folder.
 */
import fsp from "node:fs/promises";
import path from "node:path";
import { npmInstallCommand } from "./npm-command.js";
import { findNearestPackageRoot, hostPackageRoot } from "./package-source.js";

async function realOrResolved(p: string): Promise<string> {
  try {
    return await fsp.realpath(p);
  } catch {
    return path.resolve(p);
  }
}

/** Options of `installCommandHint`. */
export interface InstallHintOptions {
  /** The directory the user runs commands from (default `process.cwd()`). */
  cwd?: string;
  /** A file or folder of the host program, as for discovery (default: this copy of core). */
  hostDir?: string;
  /** Where npm's global prefix is read from (`npm_config_prefix`, `PREFIX`); default `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/**
 * How to install `packageName` so that this host finds it, as a phrase for messages ("Install it
 * with …"): the npm command for where the host is installed (`npm install -g <package>` beside a
 * global CLI, `npm install <package>` in the host's project; see `npmInstallCommand`), or
 * `npm install <package>` "in your project" when the host runs from no installation (a
 * development checkout); then `hermes-memory plugins add <package>`, which works everywhere.
 * Pass `<package>` when the package is not known. Reads two paths; never throws.
 */
export async function installCommandHint(packageName: string, options: InstallHintOptions = {}): Promise<string> {
  const root = await hostPackageRoot(options.hostDir).catch(() => null);
  return installHintFor(root, packageName, options);
}

/** `installCommandHint` for a host whose package root is already known (`null`: none searched). */
export async function installHintFor(root: string | null, packageName: string, options: InstallHintOptions = {}): Promise<string> {
  const pluginsAdd = `\`hermes-memory plugins add ${packageName}\``;
  if (root === null) return `\`npm install ${packageName}\` in your project or ${pluginsAdd}`;
  const cwdProject = await findNearestPackageRoot(await realOrResolved(options.cwd ?? process.cwd())).catch(() => null);
  const command = npmInstallCommand(root, packageName, {
    cwdProject: cwdProject === null ? null : await realOrResolved(cwdProject),
    ...(options.env ? { env: options.env } : {}),
  });
  return `\`${command}\` or ${pluginsAdd}`;
}
