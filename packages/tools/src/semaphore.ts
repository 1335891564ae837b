/** Gives a slot back. Calling it more than once does nothing. */
export type Release = () => void;

/** One place in a {@link Semaphore}'s queue. */
export interface Waiter {
  grant: (release: Release) => void;
}

/**
 * A counting semaphore whose waiters are served in the order they came (FIFO); {@link acquire}
 * waits for a slot.
 */
export class Semaphore {
  declare readonly limit: number;
  #available: number;
  readonly #queue: Waiter[] = [];

  constructor(limit: number) {
    this.limit = limit;
    this.#available = limit;
  }

  /** Callers waiting for a slot. */
  get waiting(): number {
    return this.#queue.length;
  }

  /**
   * Takes a slot if one is free and nobody waits, without a promise; undefined otherwise, after
   * queueing `waiter` if given (its `grant` gets the slot when its turn comes; see `leave`).
   */
  tryAcquire(waiter?: Waiter): Release | undefined {
    if (this.#available > 0 && this.#queue.length === 0) {
      this.#available--;
      return this.#release();
    }
    if (waiter) this.#queue.push(waiter);
    return undefined;
  }

  /** Takes a waiter out of the queue (its turn never comes). */
  leave(waiter: Waiter): void {
    const index = this.#queue.indexOf(waiter);
    if (index >= 0) this.#queue.splice(index, 1);
  }

  #release(): Release {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#queue.shift();
      // The slot passes straight to the next waiter, so no newcomer can jump the queue.
      if (next) next.grant(this.#release());
      else this.#available++;
    };
  }
}

/**
 * Waits in line for a slot of `slots`; rejects with the signal's reason when `signal` aborts
 * first (the waiter leaves the queue). A function, not a method, so a bundle whose executor never
 * waits with a signal (the browser's) leaves it out.
 */
export function acquire(slots: Semaphore, signal?: AbortSignal): Promise<Release> {
  if (signal?.aborted) return Promise.reject(signal.reason);
  return new Promise<Release>((resolve, reject) => {
    const onAbort = () => {
      slots.leave(waiter);
      reject(signal?.reason);
    };
    const waiter: Waiter = {
      grant: (release) => {
        signal?.removeEventListener("abort", onAbort);
        resolve(release);
      },
    };
    const release = slots.tryAcquire(waiter);
    if (release) resolve(release);
    else signal?.addEventListener("abort", onAbort, { once: true });
  });
}
