/**
 * How a peer (a page's client, a dispatch worker) waits between reconnect attempts: capped exponential backoff with full jitter.
 *
 * @example
 * ```ts
 * const backoff: BackoffOptions = { initialDelayMs: 250, maxDelayMs: 15_000 };
 * ```
 */
export interface BackoffOptions {
  /** The cap of the first wait. Default 250 ms. */
  initialDelayMs?: number;
  /** No wait is longer than this. Default 15 s. */
  maxDelayMs?: number;
  /** A source of numbers in [0, 1); tests pass a fixed one. Default `Math.random`. */
  random?: () => number;
}

/**
 * The wait before reconnect attempt `attempt` (0 for the first retry): a uniformly random delay
 * between 0 and `min(maxDelayMs, initialDelayMs * 2^attempt)`. Full jitter spreads the clients
 * that lost the same server over the whole window, so a restarted server is not hit by all of
 * them at once.
 *
 * @example
 * ```ts
 * backoffDelay(3, { initialDelayMs: 100, maxDelayMs: 10_000, random: () => 0.5 }); // 400
 * ```
 */
export function backoffDelay(attempt: number, options: BackoffOptions = {}): number {
  const initial = options.initialDelayMs ?? 250;
  const max = options.maxDelayMs ?? 15_000;
  const random = options.random ?? Math.random;
  // Past 2^30 the cap has long been reached; clamping the exponent keeps the product finite.
  const ceiling = Math.min(max, initial * 2 ** Math.min(Math.max(attempt, 0), 30));
  return Math.floor(random() * ceiling);
}
