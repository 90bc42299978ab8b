import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { readEnvFile, writeEnvValues } from "@hermes/memory-core";

/** The `$HERMES_HOME/.env` variable holding the bearer token of the HTTP transport. */
export const MCP_TOKEN_ENV = "HERMES_MCP_TOKEN";

/**
 * The HTTP transport's bearer token: read from `$HERMES_HOME/.env`, or generated (32 random bytes,
 * base64url) and stored there on first use. The token lives nowhere else and is never logged.
 */
export async function ensureMcpToken(hermesHome: string): Promise<string> {
  const existing = (await readEnvFile(hermesHome))[MCP_TOKEN_ENV]?.trim();
  if (existing) return existing;
  await writeEnvValues(hermesHome, { [MCP_TOKEN_ENV]: randomBytes(32).toString("base64url") });
  // Read back what is stored: when two servers start at once, both must use the surviving token.
  const stored = (await readEnvFile(hermesHome))[MCP_TOKEN_ENV]?.trim();
  if (!stored) throw new Error(`could not store ${MCP_TOKEN_ENV} in ${hermesHome}/.env`);
  return stored;
}

/**
 * Compare a presented token with the expected one in constant time. Both sides are hashed first so
 * the comparison neither leaks the length nor throws on a length mismatch.
 */
export function tokensMatch(presented: string, expected: string): boolean {
  const a = createHash("sha256").update(presented, "utf8").digest();
  const b = createHash("sha256").update(expected, "utf8").digest();
  return timingSafeEqual(a, b) && expected.length > 0;
}

/** The token of an `Authorization: Bearer <token>` header, or `null`. */
export function bearerToken(header: string | undefined): string | null {
  if (typeof header !== "string") return null;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match ? match[1]! : null;
}
