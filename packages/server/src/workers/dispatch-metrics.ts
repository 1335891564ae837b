import { Counter, Gauge, Registry } from "prom-client";

/**
 * Prometheus metrics of dispatch: connected workers, and work offered, queued and dropped.
 * Registered on the server's registry so `/metrics` shows them with the rest.
 */
export class DispatchMetrics {
  readonly registry: Registry;
  /** Dispatch workers connected now. */
  readonly workers: Gauge<string>;
  /** Work by kind and what happened to it: offered, queued, dropped, requeued (its worker went away). */
  readonly work: Counter<"kind" | "event">;
  /** Messages and calls waiting for a free worker. */
  readonly queueDepth: Gauge<string>;
  /** Hosted tool calls by what happened: offered, redelivered, no_worker, timed_out, duplicate_result. */
  readonly hostedCalls: Counter<"event">;
  /** Deliveries counted since the last read of `hostedCalls` (see {@link countOffered}). */
  #offered = 0;

  constructor(registry: Registry = new Registry(), options: { workersGauge?: Gauge<string> } = {}) {
    this.registry = registry;
    const registers = [registry];
    // The server may already own the workers gauge (its /metrics lists it); share it then.
    this.workers =
      options.workersGauge ??
      new Gauge({
        name: "patchbay_dispatch_workers_connected",
        help: "Dispatch workers connected",
        registers,
      });
    this.work = new Counter({
      name: "patchbay_dispatch_work_total",
      help: "Dispatch work (messages and incoming calls) by kind and event: offered, queued, dropped, requeued",
      labelNames: ["kind", "event"],
      registers,
    });
    this.queueDepth = new Gauge({
      name: "patchbay_dispatch_queue_depth",
      help: "Dispatch work waiting for a worker with a free slot",
      registers,
    });
    this.hostedCalls = new Counter({
      name: "patchbay_dispatch_hosted_calls_total",
      help: "Hosted tool calls by event: offered, redelivered, no_worker, timed_out, duplicate_result, stale_result",
      labelNames: ["event"],
      registers,
      // Every read (a scrape of /metrics, `get()`) first adds the deliveries counted since.
      collect: () => this.#flushOffered(),
    });
  }

  /**
   * Counts one delivery of a hosted call (`hostedCalls{event="offered"}`): a number added up here
   * and handed to the counter when it is read, since the counter's own `inc` costs about a
   * microsecond per call (it hashes the labels).
   */
  countOffered(): void {
    this.#offered++;
  }

  #flushOffered(): void {
    if (this.#offered === 0) return;
    this.hostedCalls.inc({ event: "offered" }, this.#offered);
    this.#offered = 0;
  }
}
