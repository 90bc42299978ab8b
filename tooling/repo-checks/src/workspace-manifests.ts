import fs from "node:fs";
import path from "node:path";
import type { RangeManifest } from "./version-ranges.js";

/** A workspace package's package.json: where it is and what it says. */
export interface WorkspaceManifest {
  file: string;
  manifest: RangeManifest & Record<string, unknown>;
}

/** The package.json of every workspace package (`packages/*`, `providers/*`, `tooling/*`) under `root`. */
export function readWorkspaceManifests(root: string): WorkspaceManifest[] {
  return ["packages", "providers", "tooling"]
    .flatMap((group) => fs.readdirSync(path.join(root, group)).map((name) => path.join(root, group, name, "package.json")))
    .filter((file) => fs.existsSync(file))
    .map((file) => ({ file, manifest: JSON.parse(fs.readFileSync(file, "utf8")) as WorkspaceManifest["manifest"] }));
}
