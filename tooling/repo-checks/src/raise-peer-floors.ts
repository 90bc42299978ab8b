/**
 * `pnpm version-packages` runs this after `changeset version`: every peer range on a published
 * workspace package becomes `peerRange(its new version)` (see `version-ranges.ts` for why), so a
 * package released with a new core never claims to work with an older one.
 */
import fs from "node:fs";
import { fileURLToPath } from "node:url";
import { raisePeerFloors } from "./version-ranges.js";
import { readWorkspaceManifests } from "./workspace-manifests.js";

const root = fileURLToPath(new URL("../../../", import.meta.url));
const manifests = readWorkspaceManifests(root);
const changed = new Set(raisePeerFloors(manifests.map((m) => m.manifest)));
for (const { file, manifest } of manifests) {
  if (changed.has(manifest.name)) fs.writeFileSync(file, `${JSON.stringify(manifest, null, 2)}\n`);
}
console.log(changed.size > 0 ? `peer ranges raised in ${[...changed].join(", ")}` : "peer ranges already match the current versions");
