import type { BackoffOptions } from "@patchbay/protocol/runtime";

/**
 * How a worker waits between reconnect attempts.
 *
 * @example
 * ```ts
 * const policy: BackoffPolicy = { initialDelayMs: 250, maxDelayMs: 30_000 };
 * ```
 */
export interface BackoffPolicy {
  /** The ceiling of the first retry's delay. Default 250 ms. */
  initialDelayMs?: number;
  /** No delay is ever longer than this. Default 30 s. */
  maxDelayMs?: number;
}

/**
 * The backoff a worker uses when none is given. Its cap is longer than a page client's (15 s):
 * a fleet of workers coming back to a restarted server can wait, a user in front of a page less.
 *
 * @example
 * ```ts
 * new Dispatch({ capacity: 4, backoff: { ...DEFAULT_BACKOFF, maxDelayMs: 60_000 } });
 * ```
 */
export const DEFAULT_BACKOFF: Required<BackoffPolicy> = { initialDelayMs: 250, maxDelayMs: 30_000 };

/**
 * The worker's policy as the reconnecting socket takes it (`backoffDelay` in
 * `@patchbay/protocol/runtime`: one capped exponential backoff with full jitter for every peer
 * that reconnects), with the worker's defaults filled in.
 */
export function workerBackoff(
  policy: BackoffPolicy = {},
  random: () => number = Math.random,
): BackoffOptions {
  return {
    initialDelayMs: policy.initialDelayMs ?? DEFAULT_BACKOFF.initialDelayMs,
    maxDelayMs: policy.maxDelayMs ?? DEFAULT_BACKOFF.maxDelayMs,
    random,
  };
}
