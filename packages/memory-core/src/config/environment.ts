/** Values `HERMES_ENABLE_PROJECT_PLUGINS` accepts as "on" (case-insensitive). */
const TRUTHY = new Set(["1", "true", "yes", "on"]);

/** True when `value` is 1/true/yes/on, case-insensitive, ignoring surrounding blanks. */
export function isTruthyFlag(value: unknown): boolean {
  if (typeof value === "boolean") return value;
  if (typeof value === "number") return value === 1;
  return typeof value === "string" && TRUTHY.has(value.trim().toLowerCase());
}

/**
 * Whether `<cwd>/.hermes/plugins` may be scanned: `HERMES_ENABLE_PROJECT_PLUGINS` is 1/true/yes/on.
 * Off by default, because a checked-out repository must not be able to run code on discovery's
 * behalf without the user opting in. The one place that reads this variable.
 */
export function projectPluginsEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return isTruthyFlag(env.HERMES_ENABLE_PROJECT_PLUGINS);
}
