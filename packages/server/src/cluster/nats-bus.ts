import type { Msg, NatsConnection } from "@nats-io/transport-node";
import { BusTimeoutError, ServerError } from "../errors";
import type { Bus, BusMessage, BusStatus } from "./bus";
import { ChunkAssembler, isChunk, MAX_CHUNKED_BYTES, splitMessage } from "./bus-chunks";

/** A request waiting for its answer on the bus's reply subscription. */
interface PendingRequest {
  subject: string;
  timeoutMs: number;
  timer: ReturnType<typeof setTimeout>;
  resolve(answer: string): void;
  reject(error: unknown): void;
}

/**
 * Options of {@link NatsBus.connect}.
 *
 * @example
 * ```ts
 * await NatsBus.connect({ url: "nats://127.0.0.1:4222", name: "patchbay n_a" });
 * ```
 */
export interface NatsBusOptions {
  /** One `nats://` URL, or several separated by commas (a NATS cluster). */
  url: string;
  /** The connection's name as the NATS server shows it (monitoring). */
  name?: string;
  /** How long the first connect may take before it fails (default 5 000 ms). */
  connectTimeoutMs?: number;
}

/**
 * The cluster's {@link Bus} on a NATS server (`@nats-io/transport-node`, loaded only when a
 * cluster is configured). After the first connect it reconnects for ever (every 500 ms), and
 * {@link status} says `disconnected` meanwhile; the URL's credentials never reach a log or an
 * error. A message larger than the server's `max_payload` travels in chunks (`bus-chunks.ts`),
 * requests and answers included, up to 64 MiB.
 *
 * @example
 * ```ts
 * const bus = await NatsBus.connect({ url: process.env.PATCHBAY_NATS_URL! });
 * ```
 */
export class NatsBus implements Bus {
  private current: BusStatus = "connected";
  private readonly listeners = new Set<(status: BusStatus) => void>();
  private readonly encoder = new TextEncoder();
  private readonly decoder = new TextDecoder();
  /** Answers to this bus's requests come to `<inbox>.<n>`, on one subscription. */
  private readonly inbox: string;
  private readonly requests = new Map<string, PendingRequest>();
  private requestCount = 0;

  private constructor(
    private readonly nc: NatsConnection,
    createInbox: () => string,
  ) {
    this.inbox = createInbox();
    const answers = new ChunkAssembler();
    this.nc.subscribe(`${this.inbox}.*`, {
      callback: (error, message) => {
        if (!error) this.answered(message, answers);
      },
    });
    void this.watch();
  }

  static async connect(options: NatsBusOptions): Promise<NatsBus> {
    const servers = options.url.split(",").map((url) => url.trim());
    for (const server of servers) {
      if (!/^(nats|tls):\/\/[^\s]+$/.test(server)) {
        throw new ServerError(
          "invalid_config",
          "natsUrl (PATCHBAY_NATS_URL) must be nats:// or tls:// URLs separated by commas",
          { path: "natsUrl" },
        );
      }
    }
    const { servers: plain, auth } = natsCredentials(servers);
    const { connect, createInbox } = await import("@nats-io/transport-node");
    try {
      const nc = await connect({
        // The client reads no credentials from a server URL: they go as options.
        servers: plain,
        ...auth,
        ...(options.name ? { name: options.name } : {}),
        timeout: options.connectTimeoutMs ?? 5_000,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 500,
        pingInterval: 5_000,
        maxPingOut: 2,
      });
      return new NatsBus(nc, createInbox);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new ServerError(
        "unavailable",
        `could not connect to NATS at ${servers.map(redactNatsUrl).join(", ")}: ${reason}`,
      );
    }
  }

  get status(): BusStatus {
    return this.current;
  }

  publish(subject: string, data: string): void {
    if (this.current === "closed") return;
    this.send(subject, data, undefined);
  }

  subscribe(subject: string, handler: (message: BusMessage) => void): () => void {
    const chunks = new ChunkAssembler();
    const subscription = this.nc.subscribe(subject, {
      callback: (error, message) => {
        if (error) return;
        const data = this.text(message, chunks);
        if (data === undefined) return;
        handler({
          // Decoded only when read (the hosted-call path never reads it).
          get subject() {
            return message.subject;
          },
          data,
          reply: (answer) => {
            if (message.reply && this.current !== "closed") this.send(message.reply, answer, undefined);
          },
        });
      },
    });
    return () => subscription.unsubscribe();
  }

  async flush(): Promise<void> {
    await this.nc.flush();
  }

  request(subject: string, data: string, options: { timeoutMs: number }): Promise<string> {
    return new Promise((resolve, reject) => {
      const replyTo = `${this.inbox}.${(++this.requestCount).toString(36)}`;
      const timer = setTimeout(() => this.settle(replyTo, undefined), options.timeoutMs);
      this.requests.set(replyTo, { subject, timeoutMs: options.timeoutMs, timer, resolve, reject });
      try {
        this.send(subject, data, replyTo);
      } catch (error) {
        clearTimeout(timer);
        this.requests.delete(replyTo);
        reject(error);
      }
    });
  }

  onStatus(listener: (status: BusStatus) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  async close(): Promise<void> {
    if (this.current === "closed") return;
    this.setStatus("closed");
    for (const replyTo of [...this.requests.keys()]) this.settle(replyTo, undefined);
    await this.nc.close().catch(() => {});
  }

  /** Publishes `data` whole, or in chunks when it is over the server's `max_payload`. */
  private send(subject: string, data: string, replyTo: string | undefined): void {
    const bytes = this.encoder.encode(data);
    const options = replyTo ? { reply: replyTo } : undefined;
    const max = this.nc.info?.max_payload;
    const chunks = max === undefined ? undefined : splitMessage(bytes, max);
    if (!chunks) {
      this.nc.publish(subject, bytes, options);
      return;
    }
    if (bytes.length > MAX_CHUNKED_BYTES) {
      throw new ServerError(
        "payload_too_large",
        `a message on the cluster's bus may be at most ${MAX_CHUNKED_BYTES} bytes, this one (${subject}) is ${bytes.length}`,
      );
    }
    for (const chunk of chunks) this.nc.publish(subject, chunk, options);
  }

  /** A message's text, once whole: `undefined` while a chunked message waits for its other chunks. */
  private text(message: Msg, chunks: ChunkAssembler): string | undefined {
    if (!isChunk(message.data)) return message.string();
    const whole = chunks.accept(message.data);
    return whole === undefined ? undefined : this.decoder.decode(whole);
  }

  private answered(message: Msg, chunks: ChunkAssembler): void {
    if (!this.requests.has(message.subject)) return;
    // NATS answers a request nothing subscribes to with an empty 503 ("no responders"): a node
    // whose process died has no subscriptions left, so a request to it fails at once.
    if (message.data.length === 0 && message.headers?.code === 503) {
      this.settle(message.subject, undefined, true);
      return;
    }
    const answer = this.text(message, chunks);
    if (answer !== undefined) this.settle(message.subject, answer);
  }

  /** Resolves a request with its answer, or rejects it as unanswered (`undefined`). */
  private settle(replyTo: string, answer: string | undefined, noResponders = false): void {
    const request = this.requests.get(replyTo);
    if (!request) return;
    this.requests.delete(replyTo);
    clearTimeout(request.timer);
    // No responder, a timeout or the connection going: all mean no answer in time.
    if (answer === undefined)
      request.reject(new BusTimeoutError(request.subject, request.timeoutMs, noResponders));
    else request.resolve(answer);
  }

  private async watch(): Promise<void> {
    for await (const event of this.nc.status()) {
      if (this.current === "closed") return;
      if (event.type === "disconnect" || event.type === "staleConnection") this.setStatus("disconnected");
      else if (event.type === "reconnect") this.setStatus("connected");
    }
  }

  private setStatus(status: BusStatus): void {
    if (this.current === status) return;
    this.current = status;
    for (const listener of [...this.listeners]) listener(status);
  }
}

/** Credentials a NATS URL carries, as the client's connect options take them. */
type NatsAuth = { user: string; pass: string } | { token: string } | Record<string, never>;

/**
 * The URLs without their credentials, and the credentials (`nats://user:password@host` or
 * `nats://token@host`, percent-decoded), which must be the same in every URL that has some.
 */
export function natsCredentials(urls: string[]): { servers: string[]; auth: NatsAuth } {
  let auth: NatsAuth = {};
  let seen: string | undefined;
  const servers = urls.map((url) => {
    if (!url.includes("@")) return url;
    let parsed: URL;
    let found: NatsAuth;
    try {
      parsed = new URL(url);
      const user = decodeURIComponent(parsed.username);
      const pass = decodeURIComponent(parsed.password);
      found = pass ? { user, pass } : user ? { token: user } : {};
    } catch {
      throw new ServerError("invalid_config", "natsUrl (PATCHBAY_NATS_URL) has a URL that does not parse", {
        path: "natsUrl",
      });
    }
    parsed.username = "";
    parsed.password = "";
    const key = JSON.stringify(found);
    if (key === "{}") return parsed.toString();
    if (seen !== undefined && key !== seen) {
      throw new ServerError(
        "invalid_config",
        "natsUrl (PATCHBAY_NATS_URL) has different credentials in its URLs: give the same user and password (or token) in each, or in one",
        { path: "natsUrl" },
      );
    }
    seen = key;
    auth = found;
    return parsed.toString();
  });
  return { servers, auth };
}

/** A NATS URL with its password or token masked. */
export function redactNatsUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    else if (parsed.username) parsed.username = "***";
    return parsed.toString();
  } catch {
    return "the NATS URL (unparsable)";
  }
}
