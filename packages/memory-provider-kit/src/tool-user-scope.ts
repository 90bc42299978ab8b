/**
 * The user boundary of a provider's model-facing tools. In a session opened for a user
 * (`ctx.userId`) the model speaks for that user alone, so every tool acts only within that user's
 * items: searches and lists are filtered by the user, an item named by id is looked up together
 * with the user (in the same query, so another user's id is answered exactly like an id nobody
 * ever used: same answer, same work, nothing to tell them apart), and what a tool stores is stored
 * under the user. The host's own `SearchableMemory` calls are not bound by it: they name the user
 * they mean themselves.
 */
import { HermesMemoryError } from "@hermes/memory-core";

/** The scope `ToolUserScope.item` gives: one id, with the session's user when there is one (a `ForgetScope`). */
export interface ToolItemScope {
  ids: string[];
  userId?: string;
}

/** The user a session's tools act for, and the conditions that keep them within that user. */
export class ToolUserScope {
  /** The session's user; `undefined` when the session has none and the tools reach every item. */
  readonly userId: string | undefined;

  /**
   * `userId` is the session's user (`ctx.userId`); anything but non-empty text means none. A
   * provider whose sessions without a user write as a default user passes that user instead.
   */
  constructor(userId: unknown) {
    this.userId = typeof userId === "string" && userId !== "" ? userId : undefined;
  }

  /**
   * A tool's conditions (filter arguments; other keys such as `limit` pass through) limited to the
   * session's user: `userId` is set to it. A `userId` argument naming anyone else is refused with
   * `INVALID_ARGUMENT`, in words that do not depend on that user or on what they stored. Without a
   * session user the conditions come back as they are.
   */
  within<T extends object>(conditions: T): T & { userId?: string } {
    if (this.userId === undefined) return { ...conditions };
    const asked = (conditions as { userId?: unknown }).userId;
    if (asked !== undefined && asked !== this.userId) {
      throw new HermesMemoryError({
        code: "INVALID_ARGUMENT",
        message: "userId: this conversation reaches only its own user's memory; leave userId out.",
      });
    }
    return { ...conditions, userId: this.userId };
  }

  /**
   * The scope of the item a tool names by `id`: that id with the session's user. Look it up with
   * this scope as one condition (a `forgetWhere` / `countWhere` scope, or the same query a store
   * runs for the id), never by id first and the user after, so that another user's item is not
   * found where it would have been: no answer, error or delay tells it from an unused id.
   */
  item(id: string): ToolItemScope {
    return this.userId === undefined ? { ids: [id] } : { ids: [id], userId: this.userId };
  }
}
