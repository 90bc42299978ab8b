import { HermesMemoryError } from "@hermes/memory-core";

/** The longest user id accepted, in characters. */
const MAX_USER_ID_CHARS = 256;

/** `userId` when it can name a user: not blank, no control characters, at most 256 characters. */
export function checkedUserId(userId: unknown): string {
  // eslint-disable-next-line no-control-regex -- control characters are what is refused
  if (typeof userId !== "string" || userId.trim() === "" || /[\u0000-\u001f\u007f]/.test(userId) || userId.length > MAX_USER_ID_CHARS) {
    throw new HermesMemoryError({
      code: "INVALID_ARGUMENT",
      message: `The user id must be text of 1 to ${MAX_USER_ID_CHARS} characters without control characters (got ${JSON.stringify(String(userId)).slice(0, 80)}); pass the id the user's memory is stored under, e.g. --user alice.`,
    });
  }
  return userId;
}
