/** One armed timer of a {@link TimerLists}: its callback, arguments, deadline and place. */
export interface ListedTimer {
  readonly fn: (a: never, b: never) => void;
  readonly a: unknown;
  readonly b: unknown;
  readonly at: number;
  list: TimerList | undefined;
  prev: ListedTimer | undefined;
  next: ListedTimer | undefined;
}

/**
 * `setTimeout` and `clearTimeout` for a server's many call timeouts, as the Node entry installs
 * them (`fastPaths.timers`; a page uses the global ones): timers armed with the same duration
 * fire in the order they were armed, so each duration keeps its timers in a list and one Node
 * timer armed for the list's first. Arming and clearing are an append and an unlink; Node would
 * make a `Timeout` object (and, at one call in flight, a timer list) per call. A timer cleared
 * leaves its list at once; the Node timer stays armed (unref'd while its list is empty, so it
 * keeps the process alive exactly while a timer waits) and, when it fires, calls back the timers
 * whose time has come and waits again for the next.
 */
export class TimerLists {
  readonly #lists = new Map<number, TimerList>();
  readonly #now: () => number;

  /** `now`: the clock deadlines are read from. */
  constructor(now: () => number = () => Date.now()) {
    this.#now = now;
  }

  /** Calls `fn(a, b)` in `ms` unless cleared first. */
  setTimeout<A, B>(fn: (a: A, b: B) => void, ms: number, a: A, b: B): ListedTimer {
    let list = this.#lists.get(ms);
    if (list === undefined) {
      list = new TimerList(ms, this.#now, this.#lists);
      this.#lists.set(ms, list);
    }
    return list.append(fn as ListedTimer["fn"], a, b, this.#now() + ms);
  }

  /** Stops a timer this made; nothing for one that fired or was cleared. */
  clearTimeout(timer: ListedTimer | undefined): void {
    timer?.list?.remove(timer);
  }
}

/** Node's timer handle; where a timer is a number (a DOM lib), neither method is there. */
interface Timer {
  ref?(): unknown;
  unref?(): unknown;
}

class TimerList {
  head: ListedTimer | undefined = undefined;
  tail: ListedTimer | undefined = undefined;
  #timer: Timer | undefined = undefined;
  /** The deadline the timer was armed for. */
  #timerAt = 0;
  #firing = false;
  readonly #ms: number;
  readonly #now: () => number;
  /** The lists by duration, which this one leaves once its timer found it empty. */
  readonly #lists: Map<number, TimerList>;

  constructor(ms: number, now: () => number, lists: Map<number, TimerList>) {
    this.#ms = ms;
    this.#now = now;
    this.#lists = lists;
  }

  append(fn: ListedTimer["fn"], a: unknown, b: unknown, at: number): ListedTimer {
    const tail = this.tail;
    const timer: ListedTimer = { fn, a, b, at, list: this, prev: tail, next: undefined };
    if (tail === undefined) {
      this.head = timer;
      this.tail = timer;
      const armed = this.#timer;
      // An armed timer fires no later than this deadline (deadlines only grow); it just needs
      // to keep the process alive again.
      if (armed === undefined) {
        if (!this.#firing) this.#arm(at, this.#ms);
      } else armed.ref?.();
    } else {
      tail.next = timer;
      this.tail = timer;
    }
    return timer;
  }

  remove(timer: ListedTimer): void {
    const { prev, next } = timer;
    if (prev === undefined) this.head = next;
    else prev.next = next;
    if (next === undefined) this.tail = prev;
    else next.prev = prev;
    timer.list = undefined;
    timer.prev = undefined;
    timer.next = undefined;
    if (this.head === undefined) this.#timer?.unref?.();
  }

  #arm(at: number, wait: number): void {
    this.#timerAt = at;
    this.#timer = setTimeout(fire, wait, this) as unknown as Timer;
  }

  /** The Node timer went off: call back every timer whose deadline passed, then wait for the next. */
  fire(): void {
    this.#timer = undefined;
    this.#firing = true;
    const now = this.#now();
    const timerAt = this.#timerAt;
    try {
      let timer = this.head;
      // The timer the Node timer was armed for has waited its full time by Node's own (monotonic)
      // clock, whatever the wall clock says; the others are compared with the clock.
      while (timer !== undefined && (timer.at <= now || timer.at === timerAt)) {
        this.remove(timer);
        (timer.fn as (a: unknown, b: unknown) => void)(timer.a, timer.b);
        timer = this.head;
      }
    } finally {
      this.#firing = false;
      const head = this.head;
      if (head !== undefined) {
        this.#arm(head.at, Math.min(this.#ms, Math.max(1, head.at - now)));
      } else if (this.#lists.get(this.#ms) === this) {
        this.#lists.delete(this.#ms);
      }
    }
  }
}

function fire(list: TimerList): void {
  list.fire();
}
