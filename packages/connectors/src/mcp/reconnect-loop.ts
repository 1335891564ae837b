/** A connection the loop can let go of. */
export interface Closable {
  close(): Promise<void>;
}

/**
 * How a {@link ReconnectLoop} connects and says how it went.
 *
 * @example
 * ```ts
 * const options: ReconnectOptions<Client> = {
 *   firstWaitMs: 100, maxWaitMs: 30_000,
 *   open: connect, opened: () => setDown(undefined), failed: (error) => setDown(String(error)),
 *   waiting: (attempt, inMs) => logger.warn("reconnecting", { attempt, inMs }),
 * };
 * ```
 */
export interface ReconnectOptions<C extends Closable> {
  /** The wait before the first try after the backoff; it doubles with each failed try. */
  firstWaitMs: number;
  /** The longest wait between tries. */
  maxWaitMs: number;
  /** Opens a new connection; rejects when it cannot. */
  open(): Promise<C>;
  /** A try opened `connection`. */
  opened(connection: C): void;
  /** A try failed; the next is after the backoff. */
  failed(error: unknown): void;
  /** A try is due in `inMs` (the `attempt`th since the last one that opened). */
  waiting(attempt: number, inMs: number): void;
}

/**
 * Connects again after a connection was lost: a first try at once or after the backoff, then
 * tries with a wait doubling each time (up to `maxWaitMs`) until one opens or the loop is closed.
 * The lost connection is kept until the first try settled, so what is still under way on it gets
 * its own answer, then closed (which fails what still waits on it).
 *
 * @example
 * ```ts
 * const loop = new ReconnectLoop(options);
 * const next = await loop.start(lostClient, false); // the new client, or undefined when the first try failed
 * ```
 */
export class ReconnectLoop<C extends Closable> {
  #tries = 0;
  #first: Promise<C | undefined> | undefined;
  #cancelWait: (() => void) | undefined;
  readonly #lost = new Set<C>();
  #closed = false;

  constructor(private readonly options: ReconnectOptions<C>) {}

  /** The first try after the last loss, while it runs: what it opens, or `undefined`. */
  get firstTry(): Promise<C | undefined> | undefined {
    return this.#first;
  }

  /**
   * Starts connecting again after `lost` was lost: at once when `now`, else after the backoff.
   * Call it once per loss. Resolves with the connection the first try opened, or `undefined`.
   */
  start(lost: C, now: boolean): Promise<C | undefined> {
    this.#lost.add(lost);
    const first = now ? this.#try() : this.#tryAfterWait();
    this.#first = first;
    void first.then(() => {
      if (this.#first === first) this.#first = undefined;
      if (this.#lost.delete(lost)) void lost.close().catch(() => {});
    });
    return first;
  }

  /** Stops trying and closes the lost connections still kept. */
  async close(): Promise<void> {
    this.#closed = true;
    this.#cancelWait?.();
    const lost = [...this.#lost];
    this.#lost.clear();
    await Promise.all(lost.map((connection) => connection.close().catch(() => {})));
  }

  /** One try; when it fails, the next is after the backoff. Never rejects. */
  async #try(): Promise<C | undefined> {
    let connection: C;
    try {
      connection = await this.options.open();
    } catch (error) {
      if (this.#closed) return undefined;
      this.options.failed(error);
      void this.#tryAfterWait();
      return undefined;
    }
    if (this.#closed) {
      await connection.close().catch(() => {});
      return undefined;
    }
    this.#tries = 0;
    this.options.opened(connection);
    return connection;
  }

  #tryAfterWait(): Promise<C | undefined> {
    if (this.#closed) return Promise.resolve(undefined);
    const { firstWaitMs, maxWaitMs } = this.options;
    const wait = Math.min(maxWaitMs, firstWaitMs * 2 ** Math.min(this.#tries, 20));
    this.#tries += 1;
    this.options.waiting(this.#tries, wait);
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#cancelWait = undefined;
        resolve(this.#try());
      }, wait);
      timer.unref?.();
      this.#cancelWait = () => {
        clearTimeout(timer);
        resolve(undefined);
      };
    });
  }
}
