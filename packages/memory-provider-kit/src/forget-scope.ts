/**
 * Erasure scopes (`ForgetScope` of core): which items `forgetWhere` may erase, and the two rules
 * every provider applies the same way so that no erasure selects everything by accident:
 *
 * - an empty scope is refused: it would mean "every item";
 * - a scope that would erase every item of the store (a condition every item passes, such as
 *   `createdAt: { $gte: 0 }`, or one whose erased turns take the last other items with them as
 *   their checkpoint copies) is refused unless the caller confirms with `confirmAll: true`.
 *   A scope with `ids` is exempt: it can only erase the items the caller named (and the copies of
 *   named turns), so `forget(id)` of the last item works. `{ confirmAll: true }` alone erases
 *   every item.
 */
import { HermesMemoryError, describeValue } from "@hermes/memory-core";
import { isEmptyFilter, parseMemoryFilter, type ParsedMemoryFilter } from "./memory-filter.js";

/** A validated erasure scope. */
export interface ParsedForgetScope {
  /** The conditions (with `ids`); empty only when `confirmAll` is true. */
  filter: ParsedMemoryFilter;
  /** The caller confirmed that the scope may erase every item of the store. */
  confirmAll: boolean;
}

function invalid(message: string): never {
  throw new HermesMemoryError({ code: "INVALID_ARGUMENT", message });
}

/**
 * Validate a `ForgetScope` (`parseMemoryFilter` with `ids` allowed, plus `confirmAll`: true or
 * false). Throws `INVALID_ARGUMENT`, messages starting with `what`, for a malformed scope and for
 * an empty one without `confirmAll: true`.
 */
export function parseForgetScope(scope: unknown, what = "forgetWhere scope"): ParsedForgetScope {
  const confirm =
    scope !== null && typeof scope === "object" && Object.prototype.hasOwnProperty.call(scope, "confirmAll")
      ? (scope as { confirmAll?: unknown }).confirmAll
      : undefined;
  if (confirm !== undefined && typeof confirm !== "boolean")
    invalid(`${what}: confirmAll must be true or false; got ${describeValue(confirm)}.`);
  const filter = parseMemoryFilter(scope, { what, allowIds: true, ignore: ["confirmAll"] });
  const confirmAll = confirm === true;
  if (isEmptyFilter(filter) && !confirmAll) {
    invalid(
      `${what} needs at least one condition (ids, userId, sessionId, kind, tags, createdAt or metadata); an empty scope would erase every item. To erase every item, pass { confirmAll: true }.`,
    );
  }
  return { filter, confirmAll };
}

/**
 * Refuse an erasure that would take every item of the store without the caller's confirmation:
 * call it with how many items the erasure would remove (`erasing`, copies included) and how many
 * the store holds (`total`), both read in the transaction (or snapshot) the erasure runs in, and
 * before anything is removed or with a rollback when it throws. Nothing happens for a scope with
 * `ids` or `confirmAll: true`, an erasure of no item, or one that leaves an item. Throws
 * `INVALID_ARGUMENT` saying how many items the scope matches and how to confirm.
 */
export function checkWholeStoreErasure(scope: ParsedForgetScope, erasing: number, total: number, what = "forgetWhere"): void {
  if (scope.confirmAll || scope.filter.ids !== undefined || erasing === 0 || erasing < total) return;
  invalid(
    `${what}: the scope matches all ${total} item${total === 1 ? "" : "s"} of the store; nothing was erased. To erase every item, pass confirmAll: true with the scope; to keep some, narrow it (or name the items in ids).`,
  );
}
