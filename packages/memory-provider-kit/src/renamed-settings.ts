/**
 * Settings a provider renamed: a config.yaml section or constructor options written with the old
 * name keep working. The old key is read as the new one, with a warning (once per process for each
 * place and key) that says to rename it; a section or options naming both is refused, because
 * which value was meant cannot be known.
 */
import { HermesMemoryError } from "@hermes/memory-core";

/** One renamed setting, by its snake_case keys (the camelCase option twins follow). */
export interface RenamedSetting {
  /** The old key, e.g. `prefetch_chars`. */
  from: string;
  /** The key it is read as, e.g. `prefetch_max_chars`. */
  to: string;
}

/** `prefetch_max_chars` → `prefetchMaxChars`. */
function camelCase(key: string): string {
  return key.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

const warned = new Set<string>();

/**
 * `values` (a config.yaml section with `keys: "snake"`, constructor options with `keys: "camel"`)
 * with every old key of `renames` moved to its new key. `where` names the values in messages
 * (`memory.vector in /home/a/.hermes/config.yaml`, `VectorMemoryProvider options`). Each rename is
 * reported to `warn` the first time this process sees it for `where` (nothing is reported without
 * `warn`, and it is not counted). Throws `INVALID_CONFIG` when both the old and the new key are
 * given. The same object when no old key is present.
 */
export function applyRenamedSettings<T extends object>(
  values: T,
  renames: readonly RenamedSetting[],
  options: { where: string; keys: "snake" | "camel"; warn?: ((message: string) => void) | undefined },
): T {
  const source = values as Record<string, unknown>;
  let out: Record<string, unknown> | undefined;
  for (const rename of renames) {
    const from = options.keys === "camel" ? camelCase(rename.from) : rename.from;
    const to = options.keys === "camel" ? camelCase(rename.to) : rename.to;
    if (!Object.hasOwn(source, from) || source[from] === undefined) continue;
    if (Object.hasOwn(source, to) && source[to] !== undefined) {
      throw new HermesMemoryError({
        code: "INVALID_CONFIG",
        message: `${options.where} sets both ${from} and ${to}; ${from} is the old name of ${to}. Remove ${from} and keep the value you want under ${to}.`,
      });
    }
    out ??= { ...source };
    out[to] = source[from];
    delete out[from];
    const once = `${options.where}\0${from}`;
    if (options.warn && !warned.has(once)) {
      warned.add(once);
      options.warn(`${options.where}: ${from} is the old name of ${to} and is read as ${to}; rename it to ${to}.`);
    }
  }
  return (out ?? source) as T;
}
