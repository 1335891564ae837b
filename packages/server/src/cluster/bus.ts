/**
 * A message that arrived on a {@link Bus} subscription. `reply` answers a {@link Bus.request}
 * (it does nothing for a plain publish).
 *
 * @example
 * ```ts
 * bus.subscribe("patchbay.node.n_a.ping", (message) => message.reply(message.data));
 * ```
 */
export interface BusMessage {
  subject: string;
  /** The payload as text (cluster messages are JSON). */
  data: string;
  reply(data: string): void;
}

/**
 * Whether the bus can carry messages now: `connected`, `disconnected` (it keeps trying to
 * reconnect) or `closed` (for good).
 *
 * @example
 * ```ts
 * bus.onStatus((status) => status === "disconnected" && logger.warn("bus down"));
 * ```
 */
export type BusStatus = "connected" | "disconnected" | "closed";

/**
 * What the nodes of a cluster talk over: publish/subscribe on dotted subjects (a `*` matches one
 * token, a trailing `>` the rest) and request/reply. Delivery is at most once; everything that
 * must not be lost lives in the store, and the bus only carries. The server's own
 * implementation is {@link NatsBus}; {@link MemoryBus} joins nodes in one process for tests.
 * A message may be of any size Patchbay sends (NATS' `max_payload` is the bus's business).
 *
 * @example
 * ```ts
 * const bus = await NatsBus.connect({ url: "nats://127.0.0.1:4222" });
 * const stop = bus.subscribe("patchbay.nodes", (message) => console.log(message.data));
 * bus.publish("patchbay.nodes", JSON.stringify({ nodeId: "n_a" }));
 * ```
 */
export interface Bus {
  readonly status: BusStatus;
  publish(subject: string, data: string): void;
  /** Calls `handler` for each message on `subject`; returns the function that unsubscribes. */
  subscribe(subject: string, handler: (message: BusMessage) => void): () => void;
  /** Resolves once everything subscribed and published so far reached the bus's server. */
  flush(): Promise<void>;
  /**
   * Publishes and waits for the first reply; rejects with `BusTimeoutError` after `timeoutMs`, or
   * at once when nothing subscribes to the subject (NATS' "no responders"): a node whose process
   * died has no subscriptions left, so a request to it fails fast.
   */
  request(subject: string, data: string, options: { timeoutMs: number }): Promise<string>;
  /** Calls `listener` on each change of {@link status}; returns the function that stops it. */
  onStatus(listener: (status: BusStatus) => void): () => void;
  close(): Promise<void>;
}

/** Whether a subject pattern (`*` one token, trailing `>` the rest) matches a subject. */
export function subjectMatches(pattern: string, subject: string): boolean {
  const want = pattern.split(".");
  const have = subject.split(".");
  for (let i = 0; i < want.length; i++) {
    if (want[i] === ">") return have.length > i;
    if (i >= have.length) return false;
    if (want[i] !== "*" && want[i] !== have[i]) return false;
  }
  return want.length === have.length;
}
