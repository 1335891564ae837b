import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/**
 * The server's Prometheus metrics, on a registry of their own so several servers in one process
 * (tests, embedding) do not collide.
 */
export class ServerMetrics {
  readonly registry = new Registry();
  /** Sessions live in this process (loaded, with a socket or a running turn). */
  readonly sessions: Gauge<string>;
  readonly sessionsCreated: Counter<string>;
  readonly connectedClients: Gauge<string>;
  /** Connected dispatch workers; the dispatch module sets it. */
  readonly workers: Gauge<string>;
  readonly toolCalls: Counter<"tool" | "location" | "outcome">;
  readonly toolCallSeconds: Histogram<"tool" | "location">;
  readonly turns: Counter<"outcome">;
  readonly turnSeconds: Histogram<string>;
  readonly framesRejected: Counter<"code">;

  constructor(options: { defaultMetrics?: boolean } = {}) {
    const registers = [this.registry];
    this.sessions = new Gauge({
      name: "patchbay_sessions_active",
      help: "Sessions live in this process",
      registers,
    });
    this.sessionsCreated = new Counter({
      name: "patchbay_sessions_created_total",
      help: "Sessions created",
      registers,
    });
    this.connectedClients = new Gauge({
      name: "patchbay_clients_connected",
      help: "Client sockets connected",
      registers,
    });
    this.workers = new Gauge({
      name: "patchbay_workers_connected",
      help: "Dispatch workers connected",
      registers,
    });
    this.toolCalls = new Counter({
      name: "patchbay_tool_calls_total",
      help: "Tool calls by tool, where they ran and how they ended",
      labelNames: ["tool", "location", "outcome"],
      registers,
    });
    this.toolCallSeconds = new Histogram({
      name: "patchbay_tool_call_duration_seconds",
      help: "Tool call latency from the model's request to the result",
      labelNames: ["tool", "location"],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
      registers,
    });
    this.turns = new Counter({
      name: "patchbay_turns_total",
      help: "Turns by how they ended",
      labelNames: ["outcome"],
      registers,
    });
    this.turnSeconds = new Histogram({
      name: "patchbay_turn_duration_seconds",
      help: "Turn latency from the user message to the end of the reply",
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers,
    });
    this.framesRejected = new Counter({
      name: "patchbay_frames_rejected_total",
      help: "Client frames answered with an error, by code",
      labelNames: ["code"],
      registers,
    });
    if (options.defaultMetrics) collectDefaultMetrics({ register: this.registry });
  }

  /** The metrics in the Prometheus text format. */
  render(): Promise<string> {
    return this.registry.metrics();
  }

  /** The content type of {@link render}'s output. */
  get contentType(): string {
    return this.registry.contentType;
  }
}
