/** `memory.isolation` in config.yaml: how each named provider runs. */
import { PROVIDER_NAME_PATTERN } from "../provider.js";
import { ISOLATION_MODES, isIsolationMode, type IsolationMode } from "./protocol.js";

/** Report a setting that is ignored: key, what it held, what it needs and what applies instead. */
type Ignored = (key: string, value: unknown, needs: string, instead: string) => void;

/**
 * Read `memory.isolation: { <provider>: inline | worker }`. A value other than the allowed modes,
 * a key that is no provider name, or a section that is no mapping is reported through `ignored`
 * and left out (the provider then runs as its manifest offers, else inline).
 */
export function parseIsolationConfig(value: unknown, ignored: Ignored): Record<string, IsolationMode> {
  const modes: Record<string, IsolationMode> = {};
  if (value === undefined || value === null) return modes;
  if (typeof value !== "object" || Array.isArray(value)) {
    ignored(
      "memory.isolation",
      value,
      "must be a mapping of provider names to inline or worker",
      "each provider runs as its manifest offers",
    );
    return modes;
  }
  for (const [name, mode] of Object.entries(value as Record<string, unknown>)) {
    if (!PROVIDER_NAME_PATTERN.test(name)) {
      ignored(`memory.isolation.${name.slice(0, 64)}`, mode, "must be keyed by a provider name", "the entry is ignored");
    } else if (isIsolationMode(mode)) {
      modes[name] = mode;
    } else {
      ignored(
        `memory.isolation.${name}`,
        mode ?? "null",
        `must be one of ${ISOLATION_MODES.join(", ")}`,
        "the provider runs as its manifest offers",
      );
    }
  }
  return modes;
}
