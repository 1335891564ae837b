import { errors, jwtVerify, SignJWT } from "jose";
import { AuthError } from "../errors";

/**
 * The `aud` claim every Patchbay user token carries.
 *
 * @example
 * ```ts
 * USER_TOKEN_AUDIENCE; // "patchbay"
 * ```
 */
export const USER_TOKEN_AUDIENCE = "patchbay";

/**
 * Who a verified user token is for.
 *
 * @example
 * ```ts
 * const { userId, expiresAt } = await verifyUserToken(secret, token);
 * ```
 */
export interface VerifiedUserToken {
  userId: string;
  /** ms since the epoch. */
  expiresAt: number;
}

function keyOf(secret: string): Uint8Array {
  return new TextEncoder().encode(secret);
}

/**
 * Mints a user token: a JWT, HS256, signed with the server secret (its UTF-8 bytes), with claims
 * `{ sub: userId, iat, exp, aud: "patchbay" }`. The same contract as
 * `client.createUserToken(userId, { expiresIn })`; here for tests and server-side tooling.
 *
 * @example
 * ```ts
 * const token = await createUserToken(process.env.PATCHBAY_API_SECRET!, "user_42", { expiresIn: "15m" });
 * ```
 */
export async function createUserToken(
  secret: string,
  userId: string,
  options: { expiresIn?: number | string; now?: number } = {},
): Promise<string> {
  const now = Math.floor((options.now ?? Date.now()) / 1000);
  const expiresIn = options.expiresIn ?? "1h";
  return new SignJWT({})
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(userId)
    .setAudience(USER_TOKEN_AUDIENCE)
    .setIssuedAt(now)
    .setExpirationTime(typeof expiresIn === "number" ? now + expiresIn : expiresIn)
    .sign(keyOf(secret));
}

/**
 * Verifies a user token against the server secret. Throws {@link AuthError} whose `reason` says
 * what was wrong: `malformed`, `bad_signature` (signed with another secret: a foreign token),
 * `expired`, `wrong_audience` or `bad_claims`.
 *
 * @example
 * ```ts
 * try { await verifyUserToken(secret, token); } catch (e) { if (e instanceof AuthError) console.log(e.reason); }
 * ```
 */
export async function verifyUserToken(
  secret: string,
  token: string,
  options: { now?: number } = {},
): Promise<VerifiedUserToken> {
  try {
    const { payload } = await jwtVerify(token, keyOf(secret), {
      algorithms: ["HS256"],
      audience: USER_TOKEN_AUDIENCE,
      requiredClaims: ["sub", "exp"],
      ...(options.now === undefined ? {} : { currentDate: new Date(options.now) }),
    });
    if (typeof payload.sub !== "string" || payload.sub.length === 0 || payload.sub.length > 256) {
      throw new AuthError("bad_claims", "user token: 'sub' must be a user id of 1 to 256 characters");
    }
    return { userId: payload.sub, expiresAt: (payload.exp as number) * 1000 };
  } catch (error) {
    throw toAuthError(error);
  }
}

function toAuthError(error: unknown): AuthError {
  if (error instanceof AuthError) return error;
  if (error instanceof errors.JWTExpired) return new AuthError("expired", "user token has expired");
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return new AuthError("bad_signature", "user token signature does not match this server's secret");
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === "aud")
      return new AuthError("wrong_audience", "user token audience must be 'patchbay'");
    return new AuthError("bad_claims", `user token claim '${error.claim}' is invalid: ${error.message}`);
  }
  if (error instanceof errors.JOSEAlgNotAllowed) {
    return new AuthError("malformed", "user token must be signed with HS256");
  }
  return new AuthError("malformed", "user token is not a valid JWT");
}
