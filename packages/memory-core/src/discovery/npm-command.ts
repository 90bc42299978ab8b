/**
 * The npm command that installs a package into one of discovery's package roots. Pure: the caller
 * says which root and, when it knows, which project the user is in.
 */
import fs from "node:fs";
import path from "node:path";

/** A path as one shell word (quoted when it holds anything but plain path characters); package names need none. */
function shellWord(value: string): string {
  return /^[\w./:@%+,=-]+$/.test(value) ? value : `'${value.replace(/'/g, "'\\''")}'`;
}

/**
 * The prefix `npm install -g` uses without options: `npm_config_prefix`, else `PREFIX`, else the
 * folder Node.js is installed in (a prefix set only in an npmrc file is not read, so such a user
 * is shown the explicit `--prefix`, which is right all the same).
 */
function defaultGlobalPrefix(env: NodeJS.ProcessEnv): string {
  const configured = env.npm_config_prefix || env.NPM_CONFIG_PREFIX || env.PREFIX;
  if (configured) {
    try {
      return fs.realpathSync(configured);
    } catch {
      return path.resolve(configured);
    }
  }
  return process.platform === "win32" ? path.dirname(process.execPath) : path.dirname(path.dirname(process.execPath));
}

/**
 * The npm command that installs the package `pkg` into the package root `root` (as discovery uses
 * roots: a project folder, or a `node_modules` folder whose every package counts). A global
 * prefix's `node_modules` (`<prefix>/lib/node_modules`) gets `npm install -g`, with `--prefix` when
 * it is not the one npm uses by default; a project gets `npm install`, with `--prefix <project>`
 * unless `cwdProject` (the project the user is in) is it.
 */
export function npmInstallCommand(
  root: string,
  pkg: string,
  context: { cwdProject?: string | null; env?: NodeJS.ProcessEnv } = {},
): string {
  if (path.basename(root) === "node_modules") {
    const holder = path.dirname(root);
    const prefix = process.platform === "win32" ? holder : path.basename(holder) === "lib" ? path.dirname(holder) : null;
    if (prefix === null) return `npm install --prefix ${shellWord(holder)} ${pkg}`;
    return prefix === defaultGlobalPrefix(context.env ?? process.env)
      ? `npm install -g ${pkg}`
      : `npm install -g --prefix ${shellWord(prefix)} ${pkg}`;
  }
  return context.cwdProject === root ? `npm install ${pkg}` : `npm install --prefix ${shellWord(root)} ${pkg}`;
}
