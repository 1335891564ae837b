/** Gives a slot back. Calling it more than once does nothing. */
export type Release = () => void;

interface Waiter {
  grant: (release: Release) => void;
}

/**
 * A counting semaphore whose waiters are served in the order they came (FIFO). A waiter whose
 * signal aborts leaves the queue and its promise rejects with the signal's reason.
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
   * Takes a slot if one is free and nobody waits, without a promise; undefined otherwise (then
   * `acquire` waits in line).
   */
  tryAcquire(): Release | undefined {
    if (this.#available > 0 && this.#queue.length === 0) {
      this.#available--;
      return this.#release();
    }
    return undefined;
  }

  acquire(signal?: AbortSignal): Promise<Release> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#available > 0 && this.#queue.length === 0) {
      this.#available--;
      return Promise.resolve(this.#release());
    }
    return new Promise<Release>((resolve, reject) => {
      const onAbort = () => {
        const index = this.#queue.indexOf(waiter);
        if (index >= 0) this.#queue.splice(index, 1);
        reject(signal?.reason);
      };
      const waiter: Waiter = {
        grant: (release) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(release);
        },
      };
      this.#queue.push(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
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
