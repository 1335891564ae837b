import type { CallState } from "./call-state";

type AbortListener = ((event: LightAbortEvent) => void) | { handleEvent(event: LightAbortEvent): void };

/** The `abort` event a {@link LightSignal} hands its listeners. */
export class LightAbortEvent {
  readonly type = "abort";
  readonly target: LightSignal;

  constructor(target: LightSignal) {
    this.target = target;
  }

  get currentTarget(): LightSignal {
    return this.target;
  }
}

/**
 * A stand-in for a call's `AbortSignal` with what code that only watches for an abort reads:
 * `aborted`, `reason`, `throwIfAborted()`, `onabort`, and `addEventListener` /
 * `removeEventListener` for `abort` (a listener added twice counts once; one added after the
 * abort is never called, as on an `AbortSignal`). Node 20 takes microseconds to
 * make a real `AbortSignal`, and even an `EventTarget` makes a map per instance and checks every
 * listener it is given; this keeps its listeners in an array made on the first one. A listener
 * that throws is reported as an uncaught exception after the others ran, as `EventTarget` does.
 * A tool that asks for it (`ToolDefinition.lightSignal`) gets one as `run`'s second argument;
 * `ctx.signal` stays a real one, for `fetch` and the like.
 */
export class LightSignal {
  aborted = false;
  reason: unknown = undefined;
  onabort: ((event: LightAbortEvent) => void) | null = null;
  #listeners: AbortListener[] | undefined = undefined;

  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }

  // `abort` is dispatched once, so `{ once: true }` changes nothing here and options are not read.
  addEventListener(type: string, listener: AbortListener | null, _options?: unknown): void {
    if (type !== "abort" || listener == null || this.aborted) return;
    const listeners = this.#listeners;
    if (listeners === undefined) this.#listeners = [listener];
    else if (!listeners.includes(listener)) listeners.push(listener);
  }

  removeEventListener(type: string, listener: AbortListener | null): void {
    const listeners = this.#listeners;
    if (type !== "abort" || listeners === undefined) return;
    const index = listeners.indexOf(listener as AbortListener);
    if (index >= 0) listeners.splice(index, 1);
  }

  /** Aborts once: sets `aborted` and `reason`, then calls `onabort` and each listener once. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.#listeners ?? [];
    this.#listeners = undefined;
    const event = new LightAbortEvent(this);
    const handlers = this.onabort ? [this.onabort, ...listeners] : listeners;
    for (const handler of handlers) {
      try {
        if (typeof handler === "function") handler.call(this, event);
        else handler.handleEvent(event);
      } catch (error) {
        queueMicrotask(() => {
          throw error;
        });
      }
    }
  }
}

/** The call's stand-in, made on first use and aborted already when the call was. */
export function lightSignalOf(state: CallState): AbortSignal {
  let light = state.light as LightSignal | undefined;
  if (light === undefined) {
    light = new LightSignal();
    state.light = light;
    if (state.aborted) light.abort(state.abortReason);
  }
  return light as unknown as AbortSignal;
}
