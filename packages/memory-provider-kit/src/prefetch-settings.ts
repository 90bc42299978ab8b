/**
 * The recall settings every provider declares the same way: how many memories `prefetch` recalls
 * before a turn and the character budget of the block it returns. One name, one default and one
 * range each, so a config.yaml reads alike whichever provider it configures.
 */
import type { ConfigField } from "@hermes/memory-core";

/** Default of `prefetch_limit`: memories recalled before each turn. */
export const DEFAULT_PREFETCH_LIMIT = 5;
/** Default of `prefetch_max_chars`: the character budget of the recalled block. */
export const DEFAULT_PREFETCH_MAX_CHARS = 2000;

/** `prefetch_limit` and `prefetch_max_chars`, to spread into a provider's `ConfigField` list. */
export const PREFETCH_CONFIG_FIELDS = [
  {
    key: "prefetch_limit",
    description: "Memories recalled before each turn",
    default: DEFAULT_PREFETCH_LIMIT,
    type: "integer",
    minimum: 1,
    maximum: 50,
  },
  {
    key: "prefetch_max_chars",
    description: "Character budget of the recalled block",
    default: DEFAULT_PREFETCH_MAX_CHARS,
    type: "integer",
    minimum: 50,
    maximum: 1_000_000,
  },
] as const satisfies readonly ConfigField[];
