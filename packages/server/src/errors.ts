/**
 * The HTTP status each stable error code maps to. Codes not listed answer 500.
 *
 * @example
 * ```ts
 * HTTP_STATUS_BY_CODE.not_found; // 404
 * ```
 */
export const HTTP_STATUS_BY_CODE: Readonly<Record<string, number>> = {
  invalid_request: 400,
  invalid_frame: 400,
  invalid_json: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  frame_too_large: 413,
  payload_too_large: 413,
  rate_limited: 429,
  quota_exceeded: 429,
  unsupported_content: 400,
  invalid_tool_spec: 400,
  no_worker: 503,
  unavailable: 503,
  lease_lost: 503,
  store_lock_lost: 503,
  bus_timeout: 503,
};

/**
 * The base of every error the server raises on purpose. `code` is stable (clients switch on it),
 * `path` names the offending field where one is known, and `status` is the HTTP status the HTTP
 * API answers with.
 *
 * @example
 * ```ts
 * throw new ServerError("not_found", "session s_1 does not exist");
 * ```
 */
export class ServerError extends Error {
  readonly code: string;
  readonly path: string | undefined;
  readonly status: number;
  constructor(code: string, message: string, options: { path?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ServerError";
    this.code = code;
    this.path = options.path;
    this.status = HTTP_STATUS_BY_CODE[code] ?? 500;
  }

  /** The error as it travels on the wire. */
  toWire(): { code: string; message: string; path?: string } {
    return this.path === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, path: this.path };
  }
}

/**
 * A refused credential: a bad, expired or foreign user token, or a wrong API key or secret.
 * `code` is always `unauthorized`; `reason` says which check failed.
 *
 * @example
 * ```ts
 * if (error instanceof AuthError && error.reason === "expired") refreshToken();
 * ```
 */
export class AuthError extends ServerError {
  readonly reason: AuthFailureReason;
  constructor(reason: AuthFailureReason, message: string) {
    super("unauthorized", message);
    this.name = "AuthError";
    this.reason = reason;
  }
}

/**
 * Why a credential was refused.
 *
 * @example
 * ```ts
 * const reason: AuthFailureReason = "expired";
 * ```
 */
export type AuthFailureReason =
  | "missing"
  | "malformed"
  | "bad_signature"
  | "expired"
  | "wrong_audience"
  | "bad_claims"
  | "bad_api_key";

/**
 * A session that does not exist or belongs to someone else. Both look the same from outside, so
 * a user cannot probe for other users' session ids.
 *
 * @example
 * ```ts
 * throw new NotFoundError("session", "s_1");
 * ```
 */
export class NotFoundError extends ServerError {
  constructor(kind: string, id: string) {
    super("not_found", `${kind} ${id} does not exist`);
    this.name = "NotFoundError";
  }
}

/**
 * A store written by a newer server than this one: its schema version is past the last migration
 * this build knows, and reading or changing it could lose data. `code` is `store_version`; the
 * CLI prints the message and exits 2.
 *
 * @example
 * ```ts
 * if (error instanceof StoreVersionError) console.error(`store is v${error.found}, we read v${error.supported}`);
 * ```
 */
export class StoreVersionError extends ServerError {
  /** The schema version the store has. */
  readonly found: number;
  /** The newest schema version this server reads. */
  readonly supported: number;
  constructor(path: string, found: number, supported: number) {
    super(
      "store_version",
      `${path} has schema version ${found}, but this server supports versions up to ${supported}: ` +
        "a newer Patchbay server wrote it. Run that version (or newer), or restore the backup taken before the upgrade",
    );
    this.name = "StoreVersionError";
    this.found = found;
    this.supported = supported;
  }
}

/**
 * Converts anything thrown into a wire error without leaking internals: a {@link ServerError}
 * keeps its code and message, anything else becomes `internal`.
 *
 * @example
 * ```ts
 * const wire = toWireError(error);
 * ```
 */
export function toWireError(error: unknown): { code: string; message: string; path?: string } {
  if (error instanceof ServerError) return error.toWire();
  return { code: "internal", message: "internal server error" };
}

/**
 * The store is in use by another Patchbay server: a second server on the same data would end the
 * first one's running turns as crashed and interleave its writes. `code` is `store_locked`; the
 * message names the holder (pid, host, since when) where it is known. The CLI prints it and
 * exits 2.
 *
 * @example
 * ```ts
 * if (error instanceof StoreLockedError) console.error(`stop the other server first: ${error.message}`);
 * ```
 */
export class StoreLockedError extends ServerError {
  /** Who holds the store (pid, host, since when), where it is known. */
  readonly holder: string | undefined;
  constructor(where: string, holder: string | undefined) {
    super(
      "store_locked",
      `${where} is in use by another Patchbay server${holder ? ` (${holder})` : ""}: one server per store. ` +
        "Stop that server first, or give this one its own data",
    );
    this.name = "StoreLockedError";
    this.holder = holder;
  }
}

/**
 * A write refused because this server does not hold its Postgres store's lock (docs/production.md,
 * "PostgreSQL"). `code` is `store_lock_lost`. `taken` is false while the lock's connection dropped
 * and the store is taking the lock again (the write may be retried once it holds it), true once
 * another server took the database: this store then refuses every write for good.
 *
 * @example
 * ```ts
 * if (error instanceof StoreLockLostError && error.taken) console.error("another server took the database");
 * ```
 */
export class StoreLockLostError extends ServerError {
  readonly taken: boolean;
  constructor(where: string, taken: boolean, detail?: string) {
    super(
      "store_lock_lost",
      taken
        ? `${where} was taken by another Patchbay server${detail ? ` (${detail})` : ""} after this server's lock connection dropped: this server no longer writes to it. Stop one of the two servers`
        : `${where}: this server is taking its store lock again after its connection to the database dropped; writes resume once it holds it`,
    );
    this.name = "StoreLockLostError";
    this.taken = taken;
  }
}

/**
 * A write of a session by a node that no longer owns it: in a cluster, another node took the
 * session's lease (a higher fencing token) and the store refused the whole change. `code` is
 * `lease_lost`; the node stops the session's work and unloads it. See docs/cluster.md.
 *
 * @example
 * ```ts
 * if (error instanceof LeaseLostError) live.close(0);
 * ```
 */
export class LeaseLostError extends ServerError {
  readonly sessionId: string;
  constructor(sessionId: string, detail: string) {
    super("lease_lost", `session ${sessionId}: this node no longer owns it (${detail})`);
    this.name = "LeaseLostError";
    this.sessionId = sessionId;
  }
}

/**
 * A request over the cluster's bus that got no reply in time (the node it asked is gone, or the
 * bus is down). `code` is `bus_timeout`; the message names the subject and the time waited.
 *
 * @example
 * ```ts
 * if (error instanceof BusTimeoutError) logger.warn(error.message);
 * ```
 */
export class BusTimeoutError extends ServerError {
  constructor(
    subject: string,
    timeoutMs: number,
    /** Nothing subscribes to the subject (NATS' "no responders"): a node whose process died. */
    readonly noResponders = false,
  ) {
    super(
      "bus_timeout",
      noResponders
        ? `nothing answers on ${subject} (no responders)`
        : `no reply on ${subject} within ${timeoutMs} ms`,
    );
    this.name = "BusTimeoutError";
  }
}

/**
 * A session another live node of the cluster owns (its lease runs until `expiresAt`). `code` is
 * `unavailable`: a client socket relays to the owner when it can, anything else retries.
 */
export class SessionElsewhereError extends ServerError {
  constructor(
    readonly sessionId: string,
    readonly owner: string,
    readonly expiresAt: number,
  ) {
    super(
      "unavailable",
      `session ${sessionId} is served by node ${owner} (its lease runs until ${new Date(expiresAt).toISOString()}); connect to that node or retry`,
      { path: "sessionId" },
    );
    this.name = "SessionElsewhereError";
  }
}
