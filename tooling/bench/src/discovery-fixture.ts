import fs from "node:fs";
import path from "node:path";

/** Layouts of a generated package root. */
export type DependencyLayout = "npm-flat" | "pnpm-symlinked";

/** Names of the generated dependencies that carry the manifest field. */
export function providerIndexes(total: number, withManifest: number): Set<number> {
  const step = Math.floor(total / withManifest);
  return new Set(Array.from({ length: withManifest }, (_, i) => i * step + Math.floor(step / 2)));
}

const depName = (i: number): string => `bench-dep-${String(i).padStart(4, "0")}`;
/** The provider name the i-th manifest declares. */
export const providerName = (i: number): string => `bench-provider-${String(i).padStart(4, "0")}`;

/**
 * Writes a package root with `total` direct dependencies, `withManifest` of which declare
 * `hermesMemoryProvider`. `npm-flat` puts real folders in `node_modules/`; `pnpm-symlinked` puts
 * them under `node_modules/.pnpm/<name>@1.0.0/node_modules/<name>` and links them, like pnpm does.
 */
export function writePackageRoot(root: string, layout: DependencyLayout, total = 1000, withManifest = 10): void {
  const providers = providerIndexes(total, withManifest);
  const deps: Record<string, string> = {};
  for (let i = 0; i < total; i++) deps[depName(i)] = "1.0.0";
  fs.mkdirSync(path.join(root, "node_modules"), { recursive: true });
  fs.writeFileSync(
    path.join(root, "package.json"),
    JSON.stringify({ name: "bench-root", version: "1.0.0", private: true, dependencies: deps }, null, 2),
  );
  for (let i = 0; i < total; i++) {
    const name = depName(i);
    const real =
      layout === "npm-flat"
        ? path.join(root, "node_modules", name)
        : path.join(root, "node_modules", ".pnpm", `${name}@1.0.0`, "node_modules", name);
    fs.mkdirSync(real, { recursive: true });
    const manifest: Record<string, unknown> = {
      name,
      version: "1.0.0",
      type: "module",
      main: "./index.js",
      description: `generated dependency ${i}`,
    };
    if (providers.has(i))
      manifest.hermesMemoryProvider = { name: providerName(i), entry: "./index.js", description: `generated provider ${i}` };
    fs.writeFileSync(path.join(real, "package.json"), JSON.stringify(manifest, null, 2));
    fs.writeFileSync(
      path.join(real, "index.js"),
      providers.has(i) ? "export function register(ctx) { /* MemoryProvider */ }\n" : "export default {};\n",
    );
    if (layout === "pnpm-symlinked")
      fs.symlinkSync(path.relative(path.join(root, "node_modules"), real), path.join(root, "node_modules", name), "dir");
  }
}

/** The Python entry-point group the original system uses for memory providers. */
export const PYTHON_ENTRY_POINT_GROUP = "hermes_agent.memory_providers";

/**
 * Writes a `site-packages`-style folder with `total` `.dist-info` folders; `withManifest` of them
 * declare an entry point in the memory-provider group (the Python equivalent of the npm root).
 */
export function writeSitePackages(dir: string, total = 1000, withManifest = 10): void {
  const providers = providerIndexes(total, withManifest);
  for (let i = 0; i < total; i++) {
    const dist = `bench_dep_${String(i).padStart(4, "0")}`;
    const info = path.join(dir, `${dist}-1.0.0.dist-info`);
    fs.mkdirSync(info, { recursive: true });
    fs.writeFileSync(
      path.join(info, "METADATA"),
      `Metadata-Version: 2.1\nName: ${dist.replace(/_/g, "-")}\nVersion: 1.0.0\nSummary: generated dependency ${i}\n`,
    );
    fs.writeFileSync(path.join(info, "RECORD"), `${dist}/__init__.py,,\n`);
    if (providers.has(i))
      fs.writeFileSync(path.join(info, "entry_points.txt"), `[${PYTHON_ENTRY_POINT_GROUP}]\n${providerName(i)} = ${dist}\n`);
  }
}

/**
 * Python program that times `importlib.metadata.entry_points(group=…)` with `sys.path` reduced to
 * the generated folder plus the standard library. Prints JSON `{samples, found, version}`.
 */
export const PYTHON_TIMER = String.raw`
import sys, json, time, email, email.parser, importlib.metadata as md
site, warmup, runs, group = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
sys.path[:] = [site] + [p for p in sys.path if p and "site-packages" not in p and "dist-packages" not in p]
def once():
    return md.entry_points(group=group)
first_t = time.perf_counter(); eps = once(); first = (time.perf_counter() - first_t) * 1000
for _ in range(warmup): once()
samples = []
for _ in range(runs):
    t = time.perf_counter(); eps = once(); samples.append((time.perf_counter() - t) * 1000)
print(json.dumps({"samples": samples, "first": first, "found": len(list(eps)), "version": sys.version.split()[0]}))
`;

/**
 * Node program timing one `discoverMemoryProviders` call in a fresh process, so nothing is cached
 * in the process (the OS file cache is warm, as for the Python first call). Arguments: the core
 * module's URL, then the discovery options as JSON. Prints JSON `{ms, found}`.
 */
export const NODE_FIRST_CALL_TIMER = String.raw`
const { discoverMemoryProviders } = await import(process.argv[1]);
const options = JSON.parse(process.argv[2]);
const started = process.hrtime.bigint();
const result = await discoverMemoryProviders(options);
const ms = Number(process.hrtime.bigint() - started) / 1e6;
const found = result.providers.filter((p) => p.name.startsWith("bench-provider-")).length;
console.log(JSON.stringify({ ms, found }));
`;
