import type { CallState } from "./call-state";
import { type TimerHost, timeOutCall } from "./call-timers";

/**
 * The timeouts of the calls one executor started in the same millisecond with the same duration,
 * on one timer (the Node entry's fast pipeline; see `armTimeoutBatched`). A call that ends leaves
 * its place (emptied, so the batch does not keep it) and the last one to leave clears the timer,
 * so at a server's call rates a batch lives as long as its slowest call, not its timeout. A batch
 * whose calls all ended is forgotten: a call of a later millisecond starts a new one.
 */
export class TimeoutBatch {
  readonly host: TimerHost;
  /** The executor's batches being filled, which this one leaves when its last call does. */
  readonly open: Map<number, TimeoutBatch>;
  readonly ms: number;
  /** `Date.now()` when the batch was made: a call joins only a batch of its own millisecond. */
  readonly at: number;
  readonly calls: (CallState | undefined)[] = [];
  live = 0;
  fired = false;
  timer: ReturnType<typeof setTimeout> | undefined = undefined;

  constructor(host: TimerHost, open: Map<number, TimeoutBatch>, ms: number, at: number) {
    this.host = host;
    this.open = open;
    this.ms = ms;
    this.at = at;
  }

  join(state: CallState): void {
    state.timeoutMs = this.ms;
    state.timeoutBatch = this;
    state.timeoutIndex = this.calls.push(state) - 1;
    if (this.live++ === 0) this.timer = setTimeout(fireBatch, this.ms, this);
  }

  leave(state: CallState): void {
    state.timeoutBatch = undefined;
    if (this.fired) return;
    this.calls[state.timeoutIndex] = undefined;
    if (--this.live === 0) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.calls.length = 0;
      // Gone from the executor's batches, so durations no call waits on keep nothing.
      if (this.open.get(this.ms) === this) this.open.delete(this.ms);
    }
  }
}

/** Each executor's batch being filled, per duration (a `WeakMap`, so the executor keeps no field for it). */
const open = new WeakMap<TimerHost, Map<number, TimeoutBatch>>();

/**
 * `armTimeout` as the Node entry's pipeline does it: the call joins the batch of its executor,
 * duration and millisecond (Node's own timers also count from the loop's time, not the call's),
 * so calls started together make one timer between them instead of one each. It fires as the
 * call's own timer would, and `clearTimers` takes the call out.
 */
export function armTimeoutBatched(host: TimerHost, state: CallState, timeoutMs: number): void {
  const now = Date.now();
  let batches = open.get(host);
  if (batches === undefined) {
    batches = new Map();
    open.set(host, batches);
  }
  let batch = batches.get(timeoutMs);
  if (batch === undefined || batch.at !== now || batch.fired) {
    batch = new TimeoutBatch(host, batches, timeoutMs, now);
    batches.set(timeoutMs, batch);
  }
  batch.join(state);
}

function fireBatch(batch: TimeoutBatch): void {
  batch.fired = true;
  batch.timer = undefined;
  if (batch.open.get(batch.ms) === batch) batch.open.delete(batch.ms);
  const calls = batch.calls;
  for (let i = 0; i < calls.length; i++) {
    const state = calls[i];
    if (state !== undefined) {
      state.timeoutBatch = undefined;
      timeOutCall(batch.host, state);
    }
  }
  calls.length = 0;
}
