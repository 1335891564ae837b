import type { NatsConnection } from "@nats-io/transport-node";
import { BusTimeoutError, ServerError } from "../errors";
import type { Bus, BusMessage, BusStatus } from "./bus";

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
 * error.
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

  private constructor(private readonly nc: NatsConnection) {
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
    const { connect } = await import("@nats-io/transport-node");
    try {
      const nc = await connect({
        servers,
        ...(options.name ? { name: options.name } : {}),
        timeout: options.connectTimeoutMs ?? 5_000,
        maxReconnectAttempts: -1,
        reconnectTimeWait: 500,
        pingInterval: 5_000,
        maxPingOut: 2,
      });
      return new NatsBus(nc);
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

  /** The server's `max_payload` (1 MiB unless its configuration says otherwise). */
  get maxPayloadBytes(): number | undefined {
    return this.nc.info?.max_payload;
  }

  publish(subject: string, data: string): void {
    if (this.current === "closed") return;
    this.nc.publish(subject, this.encoder.encode(data));
  }

  subscribe(subject: string, handler: (message: BusMessage) => void): () => void {
    const subscription = this.nc.subscribe(subject, {
      callback: (error, message) => {
        if (error) return;
        handler({
          // Decoded only when read (the hosted-call path never reads it).
          get subject() {
            return message.subject;
          },
          data: message.string(),
          reply: (answer) => {
            if (message.reply) message.respond(this.encoder.encode(answer));
          },
        });
      },
    });
    return () => subscription.unsubscribe();
  }

  async flush(): Promise<void> {
    await this.nc.flush();
  }

  async request(subject: string, data: string, options: { timeoutMs: number }): Promise<string> {
    try {
      const answer = await this.nc.request(subject, this.encoder.encode(data), {
        timeout: options.timeoutMs,
      });
      return answer.string();
    } catch {
      // No responder, a timeout or the connection going: all mean no answer in time.
      throw new BusTimeoutError(subject, options.timeoutMs);
    }
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
    await this.nc.close().catch(() => {});
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
