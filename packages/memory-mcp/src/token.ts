import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import path from "node:path";
import { HermesMemoryError, readEnvFile, writeEnvValues } from "@hermes/memory-core";

/** The `$HERMES_HOME/.env` variable holding the bearer token of the HTTP transport. */
export const MCP_TOKEN_ENV = "HERMES_MCP_TOKEN";

/**
 * The fewest characters a bearer token may have. A generated token has 43. The core scrubber masks a
 * token it has seen after `Bearer` wherever else it appears in the same text only from 16
 * characters on, and 16 characters of the alphabet below still carry about 96 bits when random.
 */
export const MIN_MCP_TOKEN_LENGTH = 16;

/** The characters of a Bearer credential (RFC 6750 `b64token`): letters, digits, `-._~+/`, then `=` padding. */
const B64TOKEN = /^[A-Za-z0-9\-._~+/]+=*$/;

/** Why `token` cannot protect the HTTP transport (completing "the token …"), or `null` when it can. */
export function mcpTokenProblem(token: string): string | null {
  if (!B64TOKEN.test(token)) return "has characters a Bearer credential cannot carry (use only A-Z a-z 0-9 - . _ ~ + / and = at the end)";
  if (token.length < MIN_MCP_TOKEN_LENGTH)
    return `is ${token.length} characters long; the HTTP transport needs at least ${MIN_MCP_TOKEN_LENGTH}`;
  return null;
}

/**
 * The HTTP transport's bearer token: read from `$HERMES_HOME/.env`, or generated (32 random bytes,
 * base64url) and stored there on first use. The token lives nowhere else and is never logged.
 */
export async function ensureMcpToken(hermesHome: string): Promise<string> {
  const existing = (await readEnvFile(hermesHome))[MCP_TOKEN_ENV]?.trim();
  if (existing) {
    const problem = mcpTokenProblem(existing);
    if (problem) {
      throw new HermesMemoryError({
        code: "INVALID_CONFIG",
        message: `${MCP_TOKEN_ENV} in ${path.join(hermesHome, ".env")} ${problem}. Delete the line to have a strong token generated on the next start, or set one of at least ${MIN_MCP_TOKEN_LENGTH} such characters.`,
      });
    }
    return existing;
  }
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

/**
 * The token of an `Authorization: Bearer <token>` header, or `null`. The whole value must be the
 * scheme (any case, as HTTP defines scheme names), one space and one credential of the `b64token`
 * alphabet: anything before, between or after is refused rather than skipped.
 */
export function bearerToken(header: string | undefined): string | null {
  if (typeof header !== "string") return null;
  const space = header.indexOf(" ");
  if (space < 0 || header.slice(0, space).toLowerCase() !== "bearer") return null;
  const token = header.slice(space + 1);
  return B64TOKEN.test(token) ? token : null;
}
