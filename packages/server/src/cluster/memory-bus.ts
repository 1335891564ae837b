import { BusTimeoutError } from "../errors";
import { type Bus, type BusMessage, type BusStatus, subjectMatches } from "./bus";

/**
 * The hub several {@link MemoryBus} ends share: nodes in one process (tests) talk through it as
 * they would through a NATS server. Delivery is asynchronous (a microtask later), like a network.
 */
export class MemoryBusHub {
  private readonly ends = new Set<MemoryBus>();
  private inboxes = 0;

  /** A new end of the hub, for one node. */
  connect(): MemoryBus {
    const end = new MemoryBus(this);
    this.ends.add(end);
    return end;
  }

  /** @internal */
  detach(end: MemoryBus): void {
    this.ends.delete(end);
  }

  /** @internal */
  deliver(subject: string, data: string, replyTo: string | undefined): void {
    for (const end of this.ends) end.receive(subject, data, replyTo);
  }

  /** @internal Whether a connected end subscribes to the subject. */
  listens(subject: string): boolean {
    for (const end of this.ends) if (end.listensTo(subject)) return true;
    return false;
  }

  /** @internal */
  inbox(): string {
    this.inboxes += 1;
    return `_INBOX.memory.${this.inboxes}`;
  }
}

/**
 * A {@link Bus} inside one process, on a {@link MemoryBusHub}: for tests of several nodes without
 * a NATS server, and as the reference of what a bus does. `disconnect` and `reconnect` play a
 * node losing the bus (messages published meanwhile are dropped both ways).
 *
 * @example
 * ```ts
 * const hub = new MemoryBusHub();
 * const a = hub.connect();
 * const b = hub.connect();
 * b.subscribe("hello", (m) => m.reply(`hi ${m.data}`));
 * await a.request("hello", "a", { timeoutMs: 100 }); // "hi a"
 * ```
 */
export class MemoryBus implements Bus {
  private current: BusStatus = "connected";
  private readonly subscriptions = new Set<{ subject: string; handler: (message: BusMessage) => void }>();
  private readonly listeners = new Set<(status: BusStatus) => void>();

  constructor(private readonly hub: MemoryBusHub) {}

  get status(): BusStatus {
    return this.current;
  }

  publish(subject: string, data: string): void {
    this.send(subject, data, undefined);
  }

  subscribe(subject: string, handler: (message: BusMessage) => void): () => void {
    const subscription = { subject, handler };
    this.subscriptions.add(subscription);
    return () => {
      this.subscriptions.delete(subscription);
    };
  }

  async flush(): Promise<void> {
    // Subscriptions take effect at once in one process.
  }

  request(subject: string, data: string, options: { timeoutMs: number }): Promise<string> {
    const inbox = this.hub.inbox();
    // As NATS answers "no responders": nobody listens, so no reply can come.
    if (this.current === "connected" && !this.hub.listens(subject))
      return Promise.reject(new BusTimeoutError(subject, 0, true));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        stop();
        reject(new BusTimeoutError(subject, options.timeoutMs));
      }, options.timeoutMs);
      const stop = this.subscribe(inbox, (message) => {
        clearTimeout(timer);
        stop();
        resolve(message.data);
      });
      this.send(subject, data, inbox);
    });
  }

  onStatus(listener: (status: BusStatus) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** Plays losing the bus: nothing goes out or comes in until {@link reconnect}. */
  disconnect(): void {
    if (this.current === "connected") this.setStatus("disconnected");
  }

  reconnect(): void {
    if (this.current === "disconnected") this.setStatus("connected");
  }

  async close(): Promise<void> {
    if (this.current === "closed") return;
    this.hub.detach(this);
    this.subscriptions.clear();
    this.setStatus("closed");
  }

  /** @internal */
  listensTo(subject: string): boolean {
    if (this.current !== "connected") return false;
    for (const subscription of this.subscriptions)
      if (subjectMatches(subscription.subject, subject)) return true;
    return false;
  }

  /** @internal */
  receive(subject: string, data: string, replyTo: string | undefined): void {
    if (this.current !== "connected") return;
    for (const subscription of [...this.subscriptions]) {
      if (!subjectMatches(subscription.subject, subject)) continue;
      const message: BusMessage = {
        subject,
        data,
        reply: (answer) => {
          if (replyTo) this.send(replyTo, answer, undefined);
        },
      };
      queueMicrotask(() => {
        if (this.subscriptions.has(subscription)) subscription.handler(message);
      });
    }
  }

  private send(subject: string, data: string, replyTo: string | undefined): void {
    if (this.current !== "connected") return;
    this.hub.deliver(subject, data, replyTo);
  }

  private setStatus(status: BusStatus): void {
    this.current = status;
    for (const listener of [...this.listeners]) listener(status);
  }
}
