import { assertPositiveInteger } from "./errors";
import { acquire, type Release, Semaphore } from "./semaphore";

/**
 * Process-wide caps per tool name, shared by every `ToolExecutor` (every session) it is given
 * to: for a backend with a rate limit that all sessions hit together. Calls over a cap wait
 * their turn in order, and that wait counts toward the call's timeout.
 *
 * @example
 * ```ts
 * const limiter = new ToolLimiter({ search_flights: 4 });
 * const executorA = new ToolExecutor({ tools, sessionId: "s_1", limiter });
 * const executorB = new ToolExecutor({ tools, sessionId: "s_2", limiter }); // shares the 4 slots
 * ```
 */
export class ToolLimiter {
  readonly #slots = new Map<string, Semaphore>();

  constructor(limits: Record<string, number> = {}) {
    for (const [name, limit] of Object.entries(limits)) this.setLimit(name, limit);
  }

  /** Sets the cap of one tool. Calls already holding or waiting for a slot keep the old cap. */
  setLimit(name: string, limit: number): this {
    assertPositiveInteger(`limits.${name}`, limit);
    this.#slots.set(name, new Semaphore(limit));
    return this;
  }

  /** The cap of a tool, or `undefined` when it has none. */
  limitOf(name: string): number | undefined {
    return this.#slots.get(name)?.limit;
  }

  /** How many calls of a tool wait for a slot. */
  waiting(name: string): number {
    return this.#slots.get(name)?.waiting ?? 0;
  }

  /** Waits for a slot of the tool (at once when it has no cap). Rejects when `signal` aborts first. */
  acquire(name: string, signal?: AbortSignal): Promise<Release> {
    const slots = this.#slots.get(name);
    if (!slots) return signal?.aborted ? Promise.reject(signal.reason) : Promise.resolve(() => {});
    return acquire(slots, signal);
  }

  /** @internal The slots of a tool with a cap: an executor's calls wait in line there, without a signal. */
  slots(name: string): Semaphore | undefined {
    return this.#slots.get(name);
  }
}
