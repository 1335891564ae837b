import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";

/** How many page tool names get a metrics label of their own (see `ServerMetrics.toolLabel`). */
export const PAGE_TOOL_LABELS = 100;

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
  /** The page tool names that have a label of their own (see {@link toolLabel}). */
  private readonly pageToolLabels = new Set<string>();

  /**
   * The `tool` label of a tool call. A name no backend has (`unknown_tool`) is `(unknown)`, and a
   * page's tools, which users name, have labels of their own for the first
   * {@link PAGE_TOOL_LABELS} names and `(other page tool)` after: series are never dropped, so
   * names a user makes up must not make new ones without end.
   */
  toolLabel(name: string, location: string, outcome?: string): string {
    if (outcome === "unknown_tool") return "(unknown)";
    if (location !== "page" || this.pageToolLabels.has(name)) return name;
    if (this.pageToolLabels.size >= PAGE_TOOL_LABELS) return "(other page tool)";
    this.pageToolLabels.add(name);
    return name;
  }

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
