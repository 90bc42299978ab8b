/**
 * Display form of a secret: only its last 4 characters (`…abcd`), as the setup wizard and status
 * show it. Values of 4 characters or fewer show none (`****`), since their last 4 are all of them.
 */
export function maskSecret(value: string | undefined | null): string {
  if (value === undefined || value === null || value === "") return "";
  if (value.length <= 4) return "****";
  return `…${value.slice(-4)}`;
}
