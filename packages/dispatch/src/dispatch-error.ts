/**
 * The stable codes of {@link DispatchError}. Callers switch on these, never on messages.
 *
 * @example
 * ```ts
 * if (error instanceof DispatchError && error.code === DispatchErrorCodes.unauthorized) process.exit(1);
 * ```
 */
export const DispatchErrorCodes = {
  /** An option is missing or has the wrong shape (a bad URL, a negative timeout). */
  invalidOptions: "invalid_options",
  /** No API key or secret in the options, the `client` or `PATCHBAY_API_KEY` / `PATCHBAY_API_SECRET`. */
  missingCredentials: "missing_credentials",
  /** `capacity` is not a positive integer. */
  invalidCapacity: "invalid_capacity",
  /** `run()` was called with no handler and nothing hosted: the worker would idle forever. */
  nothingToRun: "nothing_to_run",
  /** `host`, `onMessage`, `onCall` or `run` after `run()` started: the server already knows what it runs. */
  alreadyRunning: "already_running",
  /** The worker was stopped; a stopped worker does not start again. */
  stopped: "stopped",
  /** `answer` was given a message that has no session (a channel message: use `sessionFor`). */
  noSession: "no_session",
  /** `sessionFor` was given a message that has no channel. */
  noChannel: "no_channel",
  /** The server refused the API key or secret. */
  unauthorized: "unauthorized",
  /** The server does not speak this worker's protocol version. */
  protocolVersion: "protocol_version",
  /** The server sent something this worker cannot use. */
  protocol: "protocol",
} as const;

/** A stable code of {@link DispatchError}. */
export type DispatchErrorCode = (typeof DispatchErrorCodes)[keyof typeof DispatchErrorCodes];

/**
 * Every error `@patchbay/dispatch` throws or emits. `code` is stable.
 *
 * @example
 * ```ts
 * try {
 *   new Dispatch({ capacity: 0 });
 * } catch (error) {
 *   if (error instanceof DispatchError) console.log(error.code); // "invalid_capacity"
 * }
 * ```
 */
export class DispatchError extends Error {
  readonly code: DispatchErrorCode;
  /** The option that is missing or wrong (`url`, `client.secret`, `tools`), when one is. */
  readonly path: string | undefined;
  constructor(code: DispatchErrorCode, message: string, options: { cause?: unknown; path?: string } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "DispatchError";
    this.code = code;
    this.path = options.path;
  }
}
