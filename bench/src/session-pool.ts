// Sessions for the turn rigs. A session answers one message at a time (a second message
// interrupts the first), so each turn takes an idle session and gives it back. A session is
// retired after `turnsPerSession` turns and replaced in the background. The server's share of a
// turn no longer grows with the conversation (the model's messages are kept, not rebuilt, and a
// hosted call carries at most the agent's last `hostedCallConversationItems`), but the client's
// and the worker's still grow a little (see bench/HISTORY.md), so a session used for thousands
// of turns would measure the conversation's length rather than a turn. The long-conversation row
// measures that on purpose.

export interface SessionPoolOptions<S> {
  create(): Promise<S>;
  retire(session: S): void;
  /** Sessions kept: the calls in flight plus a spare or two for replacements in progress. */
  size: number;
  turnsPerSession: number;
}

export class SessionPool<S> {
  readonly #idle: { session: S; turns: number }[] = [];
  readonly #waiting: ((entry: { session: S; turns: number }) => void)[] = [];
  readonly #all = new Set<S>();
  #closed = false;

  private constructor(private readonly options: SessionPoolOptions<S>) {}

  static async open<S>(options: SessionPoolOptions<S>): Promise<SessionPool<S>> {
    const pool = new SessionPool(options);
    try {
      // A few at a time: opening hundreds at once would be a benchmark of its own.
      for (let i = 0; i < options.size; i += 16) {
        const batch = Math.min(16, options.size - i);
        await Promise.all(Array.from({ length: batch }, () => pool.#add()));
      }
    } catch (error) {
      pool.close();
      throw error;
    }
    return pool;
  }

  /** Runs one turn on an idle session (waiting for one if all are busy). */
  async use<T>(turn: (session: S) => Promise<T>): Promise<T> {
    const entry =
      this.#idle.pop() ?? (await new Promise<{ session: S; turns: number }>((r) => this.#waiting.push(r)));
    try {
      return await turn(entry.session);
    } finally {
      entry.turns++;
      if (entry.turns >= this.options.turnsPerSession && !this.#closed) {
        this.#all.delete(entry.session);
        this.options.retire(entry.session);
        void this.#add().catch((error) => console.error("bench: replacing a session failed:", error));
      } else {
        this.#give(entry);
      }
    }
  }

  close(): void {
    this.#closed = true;
    for (const session of this.#all) this.options.retire(session);
    this.#all.clear();
  }

  async #add(): Promise<void> {
    const session = await this.options.create();
    if (this.#closed) {
      this.options.retire(session);
      return;
    }
    this.#all.add(session);
    this.#give({ session, turns: 0 });
  }

  #give(entry: { session: S; turns: number }): void {
    const taker = this.#waiting.shift();
    if (taker) taker(entry);
    else this.#idle.push(entry);
  }
}
