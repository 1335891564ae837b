import type { CallState } from "./call-state";

/**
 * The calls of one executor waiting for their timeout, with one timer per distinct duration
 * instead of a `setTimeout` per call: calls armed with the same duration expire in the order they
 * were armed, so each duration keeps its calls in a list (linked through the calls themselves,
 * so arming and clearing allocate nothing) and one timer armed for the list's first call. A call
 * that ends leaves its list at once; the timer stays armed (unref'd while its list is empty, so
 * it keeps the process alive exactly while a call waits) and, when it fires, ends the calls whose
 * time has come and waits again for the next. At one call in flight this costs a timer every
 * `timeoutMs` instead of one per call.
 */
export class CallTimeouts {
  readonly #lists = new Map<number, TimeoutList>();
  readonly #now: () => number;
  readonly #expire: (state: CallState) => void;

  /** `now`: the executor's clock (deadlines); `expire`: ends a call whose time has come. */
  constructor(now: () => number, expire: (state: CallState) => void) {
    this.#now = now;
    this.#expire = expire;
  }

  /** Starts the call's timeout of `ms`. */
  arm(state: CallState, ms: number): void {
    let list = this.#lists.get(ms);
    if (list === undefined) {
      list = new TimeoutList(ms, this.#now, this.#expire, this.#lists);
      this.#lists.set(ms, list);
    }
    list.append(state, this.#now() + ms);
  }
}

/** Node's timer handle; where a timer is a number (a DOM lib), neither method is there. */
interface Timer {
  ref?(): unknown;
  unref?(): unknown;
}

class TimeoutList {
  head: CallState | undefined = undefined;
  tail: CallState | undefined = undefined;
  #timer: Timer | undefined = undefined;
  /** The deadline the timer was armed for. */
  #timerAt = 0;
  #firing = false;
  readonly #ms: number;
  readonly #now: () => number;
  readonly #expire: (state: CallState) => void;
  /** The lists by duration, which this one leaves once its timer found it empty. */
  readonly #lists: Map<number, TimeoutList>;

  constructor(
    ms: number,
    now: () => number,
    expire: (state: CallState) => void,
    lists: Map<number, TimeoutList>,
  ) {
    this.#ms = ms;
    this.#now = now;
    this.#expire = expire;
    this.#lists = lists;
  }

  append(state: CallState, deadline: number): void {
    state.timeoutAt = deadline;
    state.timeoutList = this;
    const tail = this.tail;
    state.timeoutPrev = tail;
    state.timeoutNext = undefined;
    if (tail === undefined) {
      this.head = state;
      this.tail = state;
      const timer = this.#timer;
      // An armed timer fires no later than this call's deadline (deadlines only grow); it just
      // needs to keep the process alive again.
      if (timer === undefined) {
        if (!this.#firing) this.#arm(deadline, this.#ms);
      } else timer.ref?.();
    } else {
      tail.timeoutNext = state;
      this.tail = state;
    }
  }

  remove(state: CallState): void {
    const { timeoutPrev: prev, timeoutNext: next } = state;
    if (prev === undefined) this.head = next;
    else prev.timeoutNext = next;
    if (next === undefined) this.tail = prev;
    else next.timeoutPrev = prev;
    state.timeoutList = undefined;
    state.timeoutPrev = undefined;
    state.timeoutNext = undefined;
    if (this.head === undefined) this.#timer?.unref?.();
  }

  #arm(at: number, wait: number): void {
    this.#timerAt = at;
    this.#timer = setTimeout(fire, wait, this) as unknown as Timer;
  }

  /** The timer went off: end every call whose deadline passed, then wait for the next one. */
  fire(): void {
    this.#timer = undefined;
    this.#firing = true;
    const now = this.#now();
    const timerAt = this.#timerAt;
    try {
      let state = this.head;
      // The call the timer was armed for has waited its full time by the timer's own (monotonic)
      // clock, whatever the wall clock says; the others are compared with the clock.
      while (state !== undefined && (state.timeoutAt <= now || state.timeoutAt === timerAt)) {
        this.remove(state);
        this.#expire(state);
        state = this.head;
      }
    } finally {
      this.#firing = false;
      const head = this.head;
      if (head !== undefined) {
        this.#arm(head.timeoutAt, Math.min(this.#ms, Math.max(1, head.timeoutAt - now)));
      } else if (this.#lists.get(this.#ms) === this) {
        this.#lists.delete(this.#ms);
      }
    }
  }
}

function fire(list: TimeoutList): void {
  list.fire();
}
