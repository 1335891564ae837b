import { ModelError } from "./model-error";

/**
 * How long a model call may take. `idleMs` bounds the silence of the provider: the time with no
 * bytes received while the caller waits for the next event (from sending the request to its first
 * byte, and between chunks); `totalMs` bounds the whole call, retries and their waits included.
 * Either ends the call with a {@link ModelError} of code `timeout`, which is not retried.
 *
 * @example
 * ```ts
 * const timeouts: ModelTimeouts = { idleMs: 30_000, totalMs: 300_000 };
 * ```
 */
export interface ModelTimeouts {
  /** Default {@link DEFAULT_IDLE_TIMEOUT_MS}. */
  idleMs?: number;
  /** Default {@link DEFAULT_TOTAL_TIMEOUT_MS}. */
  totalMs?: number;
}

/**
 * The default idle timeout of a model call: two minutes of silence. Reasoning models may think for
 * a long time before their first token, and Anthropic sends `ping` events while it works.
 *
 * @example
 * ```ts
 * openai({ model: "o3", timeouts: { idleMs: DEFAULT_IDLE_TIMEOUT_MS * 2 } });
 * ```
 */
export const DEFAULT_IDLE_TIMEOUT_MS = 120_000;

/**
 * The default total timeout of a model call: ten minutes.
 *
 * @example
 * ```ts
 * anthropic({ model: "claude-sonnet-4-5", timeouts: { totalMs: DEFAULT_TOTAL_TIMEOUT_MS } });
 * ```
 */
export const DEFAULT_TOTAL_TIMEOUT_MS = 600_000;

/**
 * What one attempt of {@link streamWithRetries} is given: the signal to pass to `fetch` (it
 * aborts on the caller's signal and on a timeout) and the hook to call when bytes arrive.
 *
 * @example
 * ```ts
 * streamWithRetries((context) => attempt(body, context.signal, context.activity), { provider: "openai" });
 * ```
 */
export interface AttemptContext {
  signal: AbortSignal;
  /** Call whenever bytes arrived from the provider. */
  activity: () => void;
}

// The timers of one call. The idle timer runs only while the adapter waits on the provider: it is
// paused while the caller holds an event, so a slow consumer is never blamed on the provider.
export class CallWatch {
  readonly controller = new AbortController();
  timeoutError: ModelError | undefined;
  private idleTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly totalTimer: ReturnType<typeof setTimeout> | undefined;
  private readonly idleMs: number;
  private readonly onOuterAbort: () => void;

  constructor(
    private readonly provider: string,
    timeouts: ModelTimeouts | undefined,
    private readonly outer: AbortSignal | undefined,
  ) {
    this.idleMs = timeouts?.idleMs ?? DEFAULT_IDLE_TIMEOUT_MS;
    const totalMs = timeouts?.totalMs ?? DEFAULT_TOTAL_TIMEOUT_MS;
    this.onOuterAbort = () => this.controller.abort(outer?.reason);
    if (outer?.aborted) this.controller.abort(outer.reason);
    else outer?.addEventListener("abort", this.onOuterAbort, { once: true });
    if (totalMs > 0 && Number.isFinite(totalMs)) {
      this.totalTimer = setTimeout(
        () =>
          this.expire(
            `${provider}: the model call took longer than its total timeout of ${seconds(totalMs)}`,
            "total",
          ),
        totalMs,
      );
    }
  }

  /** (Re)starts the idle timer: the adapter is waiting on the provider. */
  waiting(): void {
    this.pause();
    if (this.idleMs <= 0 || !Number.isFinite(this.idleMs) || this.controller.signal.aborted) return;
    this.idleTimer = setTimeout(
      () =>
        this.expire(
          `${this.provider}: the provider sent nothing for ${seconds(this.idleMs)} (idle timeout)`,
          "idle",
        ),
      this.idleMs,
    );
  }

  /** Stops the idle timer while the caller holds an event. */
  pause(): void {
    if (this.idleTimer !== undefined) clearTimeout(this.idleTimer);
    this.idleTimer = undefined;
  }

  dispose(): void {
    this.pause();
    if (this.totalTimer !== undefined) clearTimeout(this.totalTimer);
    this.outer?.removeEventListener("abort", this.onOuterAbort);
  }

  private expire(message: string, kind: "idle" | "total"): void {
    if (this.controller.signal.aborted) return;
    this.timeoutError = new ModelError("timeout", message, {
      providerCode: `${kind}_timeout`,
      retryable: false,
    });
    this.controller.abort(this.timeoutError);
  }
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${(ms / 1000).toFixed(1)}s`;
}
