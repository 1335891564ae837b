import { backoffDelay } from "@patchbay/client";

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
 * The delay before a worker's reconnect attempt `attempt` (0 for the first retry): the client's
 * capped exponential backoff with full jitter (`backoffDelay` in `@patchbay/client`, one
 * implementation for every peer that reconnects), with the worker's defaults filled in.
 *
 * @example
 * ```ts
 * workerBackoffDelay(3, { initialDelayMs: 100 }); // somewhere in [0, 800)
 * ```
 */
export function workerBackoffDelay(
  attempt: number,
  policy: BackoffPolicy = {},
  random: () => number = Math.random,
): number {
  return backoffDelay(attempt, {
    initialDelayMs: policy.initialDelayMs ?? DEFAULT_BACKOFF.initialDelayMs,
    maxDelayMs: policy.maxDelayMs ?? DEFAULT_BACKOFF.maxDelayMs,
    random,
  });
}
