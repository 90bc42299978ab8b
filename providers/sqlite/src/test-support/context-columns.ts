import { itemsContextSql } from "@hermes/memory-provider-kit/sqlite";

/**
 * The context columns of a turn as its FTS document holds them (`prev1`, `prev2`), derived from
 * the ids of its previous turns, for a SELECT over `items` without an alias.
 */
export const CONTEXT_COLUMNS = `${itemsContextSql("items.prev_id")} AS prev1, ${itemsContextSql("items.prev2_id")} AS prev2`;
