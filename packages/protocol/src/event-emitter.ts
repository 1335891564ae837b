// A small event emitter with eventemitter3's API and semantics (the same method names, listener
// order, `this` and once-handling), for the classes a browser page loads: the client's session
// and connection and the tools' executor. It is about a quarter of eventemitter3's size, which
// matters in a page's bundle; event-emitter.test.ts runs the same script against both.

/**
 * The events an emitter emits: each name to its listener (`(a: A) => void`) or to its
 * arguments (`[a: A]`); or just event names, with untyped listeners.
 *
 * @example
 * ```ts
 * type DoorEvents = { opened: [by: string]; closed: () => void };
 * ```
 */
export type ValidEventTypes = string | symbol | object;

/**
 * The names of an emitter's events.
 *
 * @example
 * ```ts
 * const name: EventNames<{ opened: [by: string] }> = "opened";
 * ```
 */
export type EventNames<T extends ValidEventTypes> = T extends string | symbol ? T : keyof T;

type ArgumentMap<T extends object> = {
  [K in keyof T]: T[K] extends (...args: any[]) => void
    ? Parameters<T[K]>
    : T[K] extends any[]
      ? T[K]
      : any[];
};

/**
 * The listener of one event.
 *
 * @example
 * ```ts
 * const onOpened: EventListener<{ opened: [by: string] }, "opened"> = (by) => console.log(by);
 * ```
 */
export type EventListener<T extends ValidEventTypes, K extends EventNames<T>> = T extends string | symbol
  ? (...args: any[]) => void
  : (...args: ArgumentMap<Exclude<T, string | symbol>>[Extract<K, keyof T>]) => void;

/**
 * The arguments of one event.
 *
 * @example
 * ```ts
 * const args: EventArgs<{ opened: [by: string] }, "opened"> = ["Ada"];
 * ```
 */
export type EventArgs<T extends ValidEventTypes, K extends EventNames<T>> = Parameters<EventListener<T, K>>;

interface Listener {
  fn: (...args: any[]) => void;
  context: unknown;
  once: boolean;
}

/**
 * Typed events: `on`, `once`, `off`, `emit` and the rest of eventemitter3's API. Listeners run
 * in the order they were added, with `this` set to the context given (the emitter by default);
 * a listener added or removed during an `emit` takes effect from the next one.
 *
 * @example
 * ```ts
 * class Door extends EventEmitter<{ opened: [by: string] }> {}
 * new Door().on("opened", (by) => console.log(by)).emit("opened", "Ada");
 * ```
 */
export class EventEmitter<EventTypes extends ValidEventTypes = string | symbol, Context = any> {
  // Arrays are replaced, never changed in place, so an emit in progress keeps its own.
  #events = new Map<EventNames<EventTypes>, Listener[]>();

  /** The events that have listeners. */
  eventNames(): Array<EventNames<EventTypes>> {
    return [...this.#events.keys()];
  }

  /** The listeners of an event, in order. */
  listeners<T extends EventNames<EventTypes>>(event: T): Array<EventListener<EventTypes, T>> {
    return (this.#events.get(event) ?? []).map((listener) => listener.fn as EventListener<EventTypes, T>);
  }

  /** How many listeners an event has. */
  listenerCount(event: EventNames<EventTypes>): number {
    return this.#events.get(event)?.length ?? 0;
  }

  /** Calls each listener of the event with `args`; false when it had none. */
  emit<T extends EventNames<EventTypes>>(event: T, ...args: EventArgs<EventTypes, T>): boolean {
    const listeners = this.#events.get(event);
    if (listeners === undefined) return false;
    for (const listener of listeners) {
      if (listener.once)
        this.removeListener(event, listener.fn as EventListener<EventTypes, T>, undefined, true);
      listener.fn.apply(listener.context, args);
    }
    return true;
  }

  on<T extends EventNames<EventTypes>>(event: T, fn: EventListener<EventTypes, T>, context?: Context): this {
    return this.#add(event, fn, context, false);
  }

  addListener<T extends EventNames<EventTypes>>(
    event: T,
    fn: EventListener<EventTypes, T>,
    context?: Context,
  ): this {
    return this.#add(event, fn, context, false);
  }

  /** Adds a listener that is removed before it first runs. */
  once<T extends EventNames<EventTypes>>(
    event: T,
    fn: EventListener<EventTypes, T>,
    context?: Context,
  ): this {
    return this.#add(event, fn, context, true);
  }

  /**
   * Removes the listeners of an event that match: all of them without `fn`; with `fn`, those of
   * that function (and of that context, and added with `once`, when given).
   */
  removeListener<T extends EventNames<EventTypes>>(
    event: T,
    fn?: EventListener<EventTypes, T>,
    context?: Context,
    once?: boolean,
  ): this {
    const listeners = this.#events.get(event);
    if (listeners === undefined) return this;
    const kept = fn
      ? listeners.filter((l) => l.fn !== fn || (once && !l.once) || (context && l.context !== context))
      : [];
    if (kept.length > 0) this.#events.set(event, kept);
    else this.#events.delete(event);
    return this;
  }

  off<T extends EventNames<EventTypes>>(
    event: T,
    fn?: EventListener<EventTypes, T>,
    context?: Context,
    once?: boolean,
  ): this {
    return this.removeListener(event, fn, context, once);
  }

  /** Removes every listener, or those of one event. */
  removeAllListeners(event?: EventNames<EventTypes>): this {
    if (event) this.#events.delete(event);
    else this.#events = new Map();
    return this;
  }

  #add(event: EventNames<EventTypes>, fn: unknown, context: unknown, once: boolean): this {
    if (typeof fn !== "function") throw new TypeError("The listener must be a function");
    const listener: Listener = { fn: fn as Listener["fn"], context: context || this, once };
    const listeners = this.#events.get(event);
    this.#events.set(event, listeners ? [...listeners, listener] : [listener]);
    return this;
  }
}
