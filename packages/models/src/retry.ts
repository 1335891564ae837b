import { type AttemptContext, CallWatch, type ModelTimeouts } from "./call-timeouts";
import { ModelError, toModelError } from "./model-error";

/**
 * How a model adapter retries a failed call. Only rate limits (429), provider errors (5xx, 408)
 * and failed connections are retried, and only while nothing of the reply has been yielded.
 *
 * @example
 * ```ts
 * const retry: RetryOptions = { maxRetries: 4, initialDelayMs: 250 };
 * ```
 */
export interface RetryOptions {
  /** Retries after the first attempt. Default 2. */
  maxRetries?: number;
  /** Backoff before the first retry, doubled for each further one. Default 500. */
  initialDelayMs?: number;
  /** Upper bound of the computed backoff. Default 8000. */
  maxDelayMs?: number;
  /**
   * The longest `retry-after` the adapter waits out. A provider asking for longer ends the call
   * with the `rate_limited` error (and its `retryAfterMs`) so the caller can decide. Default 60000.
   */
  maxRetryAfterMs?: number;
}

/**
 * The wait before retry number `attempt` (0 for the first retry): the provider's `retry-after`
 * when it gave one, else exponential backoff with jitter (between half and all of
 * `initialDelayMs * 2^attempt`, capped at `maxDelayMs`) so that many clients do not retry in step.
 *
 * @example
 * ```ts
 * retryDelay(1, undefined, { initialDelayMs: 100 }); // between 100 and 200
 * ```
 */
export function retryDelay(
  attempt: number,
  retryAfterMs: number | undefined,
  options: RetryOptions = {},
  random: () => number = Math.random,
): number {
  if (retryAfterMs !== undefined) return retryAfterMs;
  const base = Math.min(options.maxDelayMs ?? 8000, (options.initialDelayMs ?? 500) * 2 ** attempt);
  return Math.round(base / 2 + (base / 2) * random());
}

/**
 * Resolves after `ms`, or rejects at once with an `aborted` {@link ModelError} when `signal`
 * aborts first.
 *
 * @example
 * ```ts
 * await sleep(250, request.signal);
 * ```
 */
export function sleep(ms: number, signal: AbortSignal | undefined, provider = "model"): Promise<void> {
  return new Promise((resolve, reject) => {
    const aborted = () => new ModelError("aborted", `${provider}: the request was aborted`);
    if (signal?.aborted) {
      reject(aborted());
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(aborted());
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Runs `attempt` and re-yields its events; when it fails with a retryable error before yielding
 * anything, waits and runs it again, at most `maxRetries` more times. Once an event has been
 * yielded the caller has acted on it, so a later failure is thrown as is and never retried.
 * Every failure leaves as a {@link ModelError}. `timeouts` bound the provider's silence and the
 * whole call (see {@link ModelTimeouts}); the attempt is given the signal to pass to `fetch` and
 * the hook to call when bytes arrive.
 *
 * @example
 * ```ts
 * yield* streamWithRetries(() => attemptOnce(request), { provider: "openai", signal, retry: { maxRetries: 2 } });
 * ```
 */
export async function* streamWithRetries<T>(
  attempt: (context: AttemptContext) => AsyncIterable<T>,
  options: {
    provider: string;
    signal?: AbortSignal | undefined;
    retry?: RetryOptions | undefined;
    timeouts?: ModelTimeouts | undefined;
  },
): AsyncGenerator<T, void, undefined> {
  const { provider, signal } = options;
  const retry = options.retry ?? {};
  const maxRetries = Math.max(0, retry.maxRetries ?? 2);
  const maxRetryAfterMs = retry.maxRetryAfterMs ?? 60_000;
  const watch = new CallWatch(provider, options.timeouts, signal);
  const context: AttemptContext = { signal: watch.controller.signal, activity: () => watch.waiting() };
  try {
    for (let attemptNumber = 0; attemptNumber <= maxRetries; attemptNumber++) {
      if (signal?.aborted) throw new ModelError("aborted", `${provider}: the request was aborted`);
      let yielded = false;
      try {
        watch.waiting();
        for await (const event of attempt(context)) {
          yielded = true;
          watch.pause();
          yield event;
          watch.waiting();
        }
        return;
      } catch (thrown) {
        if (watch.timeoutError) throw watch.timeoutError;
        const error = toModelError(thrown, signal, provider);
        const waitTooLong = error.retryAfterMs !== undefined && error.retryAfterMs > maxRetryAfterMs;
        if (yielded || !error.retryable || attemptNumber >= maxRetries || waitTooLong) throw error;
        watch.pause();
        await sleep(retryDelay(attemptNumber, error.retryAfterMs, retry), watch.controller.signal, provider);
      }
    }
  } catch (error) {
    throw watch.timeoutError ?? error;
  } finally {
    watch.dispose();
  }
}
