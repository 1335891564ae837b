/**
 * The progress rule of the seed: "a newer update replaces one that hasn't been said yet, and the
 * result replaces both". The first update of a quiet call goes out at once; updates that follow
 * within `intervalMs` wait, and only the newest of them goes out when the interval ends. When the
 * call finishes, whatever still waits is dropped: the result says more.
 */
export class ProgressCoalescer {
  private readonly calls = new Map<string, { waiting?: string; timer?: ReturnType<typeof setTimeout> }>();

  constructor(
    private readonly intervalMs: number,
    private readonly flush: (callId: string, text: string) => void,
  ) {}

  /** A new progress line for a call. */
  push(callId: string, text: string): void {
    const state = this.calls.get(callId);
    if (state?.timer !== undefined) {
      state.waiting = text;
      return;
    }
    this.flush(callId, text);
    this.startQuietPeriod(callId);
  }

  /** The call finished: drop what was not said yet. */
  drop(callId: string): void {
    const state = this.calls.get(callId);
    if (state?.timer !== undefined) clearTimeout(state.timer);
    this.calls.delete(callId);
  }

  /** Drops everything (session closing). */
  clear(): void {
    for (const callId of [...this.calls.keys()]) this.drop(callId);
  }

  private startQuietPeriod(callId: string): void {
    const state = {
      waiting: undefined as string | undefined,
      timer: undefined as ReturnType<typeof setTimeout> | undefined,
    };
    state.timer = setTimeout(() => {
      const waiting = state.waiting;
      this.calls.delete(callId);
      if (waiting !== undefined) {
        this.flush(callId, waiting);
        this.startQuietPeriod(callId);
      }
    }, this.intervalMs);
    this.calls.set(callId, state);
  }
}
