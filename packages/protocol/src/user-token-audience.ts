/**
 * The `aud` claim of a user token: whoever mints one (`createUserToken` in `@patchbay/client`, a
 * backend of its own) sets it, and the server refuses a token without it.
 *
 * @example
 * ```ts
 * await jwtVerify(token, key, { audience: USER_TOKEN_AUDIENCE });
 * ```
 */
export const USER_TOKEN_AUDIENCE = "patchbay";
