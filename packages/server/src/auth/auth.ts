import { timingSafeEqual } from "node:crypto";
import { AuthError, NotFoundError, ServerError } from "../errors";
import type { SessionRecord } from "../store/store";
import { verifyUserToken } from "./user-token";

/**
 * Who is on the other end of a socket or an HTTP request: a backend (API key and secret, may act
 * for any user) or one user (a user token).
 *
 * @example
 * ```ts
 * if (principal.kind === "user") console.log(principal.userId);
 * ```
 */
export type Principal = { kind: "backend" } | { kind: "user"; userId: string };

/** The backend principal: one frozen object, not one per socket or request that says hello. */
const BACKEND: Principal = Object.freeze({ kind: "backend" });

/**
 * The credentials the server checks everything against.
 *
 * @example
 * ```ts
 * const credentials: ServerCredentials = { apiKey: "pk_live", secret: "a long random secret" };
 * ```
 */
export interface ServerCredentials {
  apiKey: string;
  secret: string;
}

/**
 * A socket's `hello.auth`.
 *
 * @example
 * ```ts
 * const auth: HelloAuth = { kind: "user", token };
 * ```
 */
export type HelloAuth =
  | { kind: "user"; token: string }
  | { kind: "api_key"; apiKey: string; secret?: string };

function same(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  // Compare equal lengths only; the length itself is not the secret part.
  return left.length === right.length && timingSafeEqual(left, right);
}

/** Checks credentials: the API key and secret of backends and workers, and user tokens. */
export class Authenticator {
  constructor(private readonly credentials: ServerCredentials) {
    if (!credentials.apiKey || !credentials.secret) {
      throw new ServerError("invalid_config", "the server needs an API key and a secret");
    }
  }

  /** Throws {@link AuthError} unless both the API key and the secret match. */
  checkApiKey(apiKey: string | undefined, secret: string | undefined): void {
    if (!apiKey) throw new AuthError("missing", "API key is missing");
    if (!secret) throw new AuthError("missing", "API secret is missing (send it with the API key)");
    if (!same(apiKey, this.credentials.apiKey) || !same(secret, this.credentials.secret)) {
      throw new AuthError("bad_api_key", "API key or secret is wrong");
    }
  }

  /** Authenticates a client socket's `hello`. */
  async fromHello(auth: HelloAuth): Promise<Principal> {
    if (auth.kind === "api_key") {
      this.checkApiKey(auth.apiKey, auth.secret);
      return BACKEND;
    }
    const { userId } = await verifyUserToken(this.credentials.secret, auth.token);
    return { kind: "user", userId };
  }

  /**
   * Authenticates an HTTP request: `x-api-key` plus `authorization: Bearer <secret>` for a
   * backend, or `authorization: Bearer <user token>` alone for a user.
   */
  async fromHttpHeaders(headers: Record<string, string | string[] | undefined>): Promise<Principal> {
    const apiKey = single(headers["x-api-key"]);
    const bearer = bearerOf(single(headers.authorization));
    if (apiKey !== undefined) {
      this.checkApiKey(apiKey, bearer);
      return BACKEND;
    }
    if (bearer === undefined) {
      throw new AuthError("missing", "send 'authorization: Bearer <token>' (or x-api-key with the secret)");
    }
    const { userId } = await verifyUserToken(this.credentials.secret, bearer);
    return { kind: "user", userId };
  }
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function bearerOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!match) throw new AuthError("malformed", "authorization header must be 'Bearer <token>'");
  return match[1];
}

/**
 * The user a new session belongs to. A user always opens sessions for themselves (a `userId`
 * naming someone else is refused); a backend must say which user.
 */
export function sessionOwner(principal: Principal, requested: string | undefined): string {
  if (principal.kind === "user") {
    if (requested !== undefined && requested !== principal.userId) {
      throw new ServerError("forbidden", "a user token can only open sessions for its own user", {
        path: "userId",
      });
    }
    return principal.userId;
  }
  if (requested === undefined) {
    throw new ServerError("invalid_request", "userId is required when acting with the API key", {
      path: "userId",
    });
  }
  return requested;
}

/**
 * Throws `not_found` unless the principal may reach the session: a backend reaches every session,
 * a user only their own. Another user's session looks exactly like one that does not exist.
 */
export function assertCanAccess(
  principal: Principal,
  session: SessionRecord | undefined,
  sessionId: string,
): asserts session is SessionRecord {
  if (!session || (principal.kind === "user" && session.userId !== principal.userId)) {
    throw new NotFoundError("session", sessionId);
  }
}
