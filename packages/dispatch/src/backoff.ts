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

/** The backoff a worker uses when none is given. */
export const DEFAULT_BACKOFF: Required<BackoffPolicy> = { initialDelayMs: 250, maxDelayMs: 30_000 };

/**
 * The delay before reconnect attempt `attempt` (0 for the first retry): capped exponential
 * backoff with full jitter, a uniform pick in `[0, min(max, initial * 2^attempt))`. Full jitter
 * spreads a fleet of workers that lost the server at the same moment, so a restarted server is
 * not hit by all of them at once.
 *
 * @example
 * ```ts
 * backoffDelay(3, { initialDelayMs: 100, maxDelayMs: 5_000 }); // somewhere in [0, 800)
 * ```
 */
export function backoffDelay(
  attempt: number,
  policy: BackoffPolicy = {},
  random: () => number = Math.random,
): number {
  const initial = policy.initialDelayMs ?? DEFAULT_BACKOFF.initialDelayMs;
  const max = policy.maxDelayMs ?? DEFAULT_BACKOFF.maxDelayMs;
  // 2^attempt overflows to Infinity long after the cap applies; clamp the exponent so it never does.
  const ceiling = Math.min(max, initial * 2 ** Math.min(Math.max(attempt, 0), 30));
  return Math.floor(random() * ceiling);
}
