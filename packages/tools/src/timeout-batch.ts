import type { CallState } from "./call-state";
import { type TimerHost, timeOutCall } from "./call-timers";

/**
 * The timeouts of one executor's calls, on one Node timer (the Node entry's fast pipeline; see
 * `armTimeoutBatched`). The timer is set for the earliest deadline of the calls waiting on it: a
 * call whose deadline is later only joins, one whose deadline is earlier sets it sooner. When it
 * fires, the calls whose deadline has come time out, and it is set again for the next one.
 *
 * A call that ends only leaves. The timer stays set for the executor's next calls, so a call does
 * not make and drop a Node timer (and its timer list: each call's duration is its own, the time
 * the server says is left) as a timer per call did. While no call waits on it the timer is
 * unref'd, so it never holds the process open by itself, and when it fires with none it is gone.
 * So an executor is held by its timer at most one timeout after its last call.
 */
export class TimeoutBatch {
  readonly host: TimerHost;
  /** The calls waiting on the timer. */
  readonly calls = new Set<CallState>();
  timer: ReturnType<typeof setTimeout> | undefined = undefined;
  /** When the timer fires (`Date.now()` time), while it is set. */
  due = 0;

  constructor(host: TimerHost) {
    this.host = host;
  }

  join(state: CallState, timeoutMs: number, now: number): void {
    const deadline = now + timeoutMs;
    state.timeoutMs = timeoutMs;
    state.timeoutDeadline = deadline;
    state.timeoutBatch = this;
    this.calls.add(state);
    const timer = this.timer;
    if (timer === undefined) {
      this.set(timeoutMs, deadline);
    } else if (deadline < this.due) {
      clearTimeout(timer);
      this.set(timeoutMs, deadline);
    } else if (this.calls.size === 1) {
      (timer as Refable).ref?.();
    }
  }

  leave(state: CallState): void {
    state.timeoutBatch = undefined;
    if (this.calls.delete(state) && this.calls.size === 0) (this.timer as Refable | undefined)?.unref?.();
  }

  set(delayMs: number, due: number): void {
    this.due = due;
    this.timer = setTimeout(fireBatch, delayMs, this);
  }
}

/** A Node timer's hold on the process (typed apart: a checker with DOM types sees a number). */
interface Refable {
  ref?(): unknown;
  unref?(): unknown;
}

/** Each executor's timeouts (a `WeakMap`, so the executor keeps no field for it). */
const batches = new WeakMap<TimerHost, TimeoutBatch>();

/**
 * `armTimeout` as the Node entry's pipeline does it: the call waits on its executor's one timer
 * ({@link TimeoutBatch}) instead of a timer of its own. It times out as its own timer would (the
 * same duration, counted from the same moment), and `clearTimers` takes it out.
 */
export function armTimeoutBatched(host: TimerHost, state: CallState, timeoutMs: number): void {
  let batch = batches.get(host);
  if (batch === undefined) {
    batch = new TimeoutBatch(host);
    batches.set(host, batch);
  }
  batch.join(state, timeoutMs, Date.now());
}

function fireBatch(batch: TimeoutBatch): void {
  batch.timer = undefined;
  if (batch.calls.size === 0) return;
  const now = Date.now();
  let due: CallState[] | undefined;
  let next = Number.POSITIVE_INFINITY;
  for (const state of batch.calls) {
    if (state.timeoutDeadline <= now) {
      due ??= [];
      due.push(state);
    } else if (state.timeoutDeadline < next) {
      next = state.timeoutDeadline;
    }
  }
  if (due) {
    for (const state of due) {
      batch.calls.delete(state);
      state.timeoutBatch = undefined;
    }
  }
  // Set again before the calls time out: one that starts while they do then finds it set.
  if (next !== Number.POSITIVE_INFINITY) batch.set(Math.max(1, next - now), next);
  if (due) for (const state of due) timeOutCall(batch.host, state);
}
