import type { WireError } from "@patchbay/protocol";

/**
 * The stable codes of the errors this package throws. Callers switch on these, never on messages.
 *
 * @example
 * ```ts
 * if (error instanceof ClientError && error.code === "rate_limited") await sleep(error.retryAfterMs);
 * ```
 */
export type ClientErrorCode =
  | "auth"
  | "not_found"
  | "protocol"
  | "disconnected"
  | "rate_limited"
  | "timeout"
  | "response_failed"
  | "server";

/**
 * Options shared by every client error.
 *
 * @example
 * ```ts
 * new AuthError("token expired", { wireCode: "unauthorized" });
 * ```
 */
export interface ClientErrorOptions {
  /** The code the server sent, when the error came from the server. */
  wireCode?: string;
  /** The field the server said was wrong. */
  path?: string;
  cause?: unknown;
}

/**
 * The base of every error `@patchbay/client` throws or emits; `code` is stable.
 *
 * @example
 * ```ts
 * try { await session.responses.create("hi"); }
 * catch (error) { if (error instanceof ClientError) console.log(error.code, error.wireCode); }
 * ```
 */
export class ClientError extends Error {
  // Fields set by a constructor are `declare`d in this package: no field definitions are emitted,
  // which keeps a page's bundle smaller.
  declare readonly code: ClientErrorCode;
  /** The code the server sent (`unauthorized`, `invalid_frame`, ...), when it came from the server. */
  declare readonly wireCode: string | undefined;
  /** The field the server said was wrong, dotted, where it named one. */
  declare readonly path: string | undefined;
  constructor(code: ClientErrorCode, message: string, options: ClientErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ClientError";
    this.code = code;
    this.wireCode = options.wireCode;
    this.path = options.path;
  }
}

/**
 * The server refused the credentials: a bad, expired or foreign token, a wrong API key or secret,
 * or a user reaching for something that is not theirs.
 *
 * @example
 * ```ts
 * client.on("error", (e) => { if (e instanceof AuthError) showLogin(); });
 * ```
 */
export class AuthError extends ClientError {
  constructor(message: string, options: ClientErrorOptions = {}) {
    super("auth", message, options);
    this.name = "AuthError";
  }
}

/**
 * The session (or agent) does not exist, or belongs to another user.
 *
 * @example
 * ```ts
 * await client.agent("support").sessions.get("s_missing").catch((e) => e instanceof NotFoundError);
 * ```
 */
export class NotFoundError extends ClientError {
  constructor(message: string, options: ClientErrorOptions = {}) {
    super("not_found", message, options);
    this.name = "NotFoundError";
  }
}

/**
 * A frame or a request did not fit the protocol (either side sent something invalid, or the
 * protocol versions differ).
 *
 * @example
 * ```ts
 * if (error instanceof ProtocolViolationError) console.log(error.wireCode, error.path);
 * ```
 */
export class ProtocolViolationError extends ClientError {
  constructor(message: string, options: ClientErrorOptions = {}) {
    super("protocol", message, options);
    this.name = "ProtocolViolationError";
  }
}

/**
 * The connection went away before the server answered, or the client or session was closed.
 *
 * @example
 * ```ts
 * await session.decide(id, { allowed: true }).catch((e) => e instanceof DisconnectedError);
 * ```
 */
export class DisconnectedError extends ClientError {
  constructor(message: string, options: ClientErrorOptions = {}) {
    super("disconnected", message, options);
    this.name = "DisconnectedError";
  }
}

/**
 * The server is rate limiting this connection or key. `retryAfterMs` says how long to wait.
 *
 * @example
 * ```ts
 * if (error instanceof RateLimitedError) setTimeout(retry, error.retryAfterMs ?? 1000);
 * ```
 */
export class RateLimitedError extends ClientError {
  declare readonly retryAfterMs: number | undefined;
  constructor(message: string, options: ClientErrorOptions & { retryAfterMs?: number } = {}) {
    super("rate_limited", message, options);
    this.name = "RateLimitedError";
    this.retryAfterMs = options.retryAfterMs;
  }
}

/**
 * The server did not answer in time.
 *
 * @example
 * ```ts
 * const client = new Client({ baseUrl, requestTimeoutMs: 5_000 });
 * ```
 */
export class TimeoutError extends ClientError {
  constructor(message: string, options: ClientErrorOptions = {}) {
    super("timeout", message, options);
    this.name = "TimeoutError";
  }
}

/**
 * The agent could not finish a reply (`response.failed`): a model error, a dropped message. The
 * session stays usable; `wireCode` says what went wrong.
 *
 * @example
 * ```ts
 * await session.responses.create("hi").catch((e) => e instanceof ResponseFailedError && e.wireCode);
 * ```
 */
export class ResponseFailedError extends ClientError {
  declare readonly responseId: string;
  constructor(message: string, responseId: string, options: ClientErrorOptions = {}) {
    super("response_failed", message, options);
    this.name = "ResponseFailedError";
    this.responseId = responseId;
  }
}

/**
 * Any other error the server reported (`conflict`, `internal`, `queue_full`, ...).
 *
 * @example
 * ```ts
 * if (error instanceof ServerError && error.wireCode === "conflict") reload();
 * ```
 */
export class ServerError extends ClientError {
  constructor(message: string, options: ClientErrorOptions = {}) {
    super("server", message, options);
    this.name = "ServerError";
  }
}

const protocolCodes = new Set([
  "invalid_frame",
  "invalid_json",
  "frame_too_large",
  "unknown_frame_type",
  "protocol_version",
  "protocol",
]);

/**
 * Turns an error the server sent (an `error` frame or an HTTP error body) into the typed error
 * with the stable code that matches it.
 *
 * @example
 * ```ts
 * errorFromWire({ code: "unauthorized", message: "token expired" }) instanceof AuthError; // true
 * ```
 */
export function errorFromWire(error: WireError & { retryAfterMs?: number }): ClientError {
  const options: ClientErrorOptions = { wireCode: error.code, path: error.path };
  const message = error.message || error.code;
  if (error.code === "unauthorized" || error.code === "forbidden") return new AuthError(message, options);
  if (error.code === "not_found") return new NotFoundError(message, options);
  if (error.code === "rate_limited")
    return new RateLimitedError(message, { ...options, retryAfterMs: error.retryAfterMs });
  if (error.code === "timeout" || error.code === "timed_out") return new TimeoutError(message, options);
  if (protocolCodes.has(error.code)) return new ProtocolViolationError(message, options);
  return new ServerError(message, options);
}
