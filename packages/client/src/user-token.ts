import { USER_TOKEN_AUDIENCE } from "@patchbay/protocol/lite";

/**
 * Options of {@link createUserToken}.
 *
 * @example
 * ```ts
 * const options: UserTokenOptions = { expiresIn: "15m" };
 * ```
 */
export interface UserTokenOptions {
  /** Seconds from now, or a jose time span such as `"15m"` or `"2h"`. Default `"1h"`. */
  expiresIn?: number | string;
  /** The user's display name, carried as the `name` claim. */
  name?: string;
}

/**
 * Mints a user token: a JWT signed with HS256 using the secret's UTF-8 bytes as the key, with
 * claims `{ sub: userId, iat, exp, aud: "patchbay" }`. Only a backend holds the secret; the page
 * gets the token.
 *
 * @example
 * ```ts
 * const token = await createUserToken(process.env.PATCHBAY_SECRET!, "user_42", { expiresIn: "15m" });
 * ```
 */
export async function createUserToken(
  secret: string,
  userId: string,
  options: UserTokenOptions = {},
): Promise<string> {
  if (!secret) throw new TypeError("createUserToken needs the secret");
  if (!userId) throw new TypeError("createUserToken needs a user id");
  // Loaded when first used, with jose: only a backend mints tokens, so a page's bundle keeps
  // both in a chunk it never fetches.
  const { signUserToken } = await import("./sign-user-token");
  return signUserToken(secret, userId, USER_TOKEN_AUDIENCE, options);
}

/**
 * When a token expires, in milliseconds since the epoch, read from its `exp` claim without
 * checking the signature (the page cannot; it only wants to know whether to refresh first).
 * `undefined` when the token is not a JWT or has no `exp`.
 *
 * @example
 * ```ts
 * if ((tokenExpiresAt(token) ?? Infinity) < Date.now() + 5_000) token = await refresh();
 * ```
 */
export function tokenExpiresAt(token: string): number | undefined {
  const payload = token.split(".")[1];
  if (!payload) return undefined;
  try {
    const base64 = payload.replace(/-/g, "+").replace(/_/g, "/");
    const padded = base64 + "=".repeat((4 - (base64.length % 4)) % 4);
    const claims = JSON.parse(decodeBase64(padded)) as { exp?: unknown };
    return typeof claims.exp === "number" ? claims.exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

function decodeBase64(text: string): string {
  const binary = atob(text);
  const bytes = Uint8Array.from(binary, (char) => char.charCodeAt(0));
  return new TextDecoder().decode(bytes);
}
