import type { Logger } from "./logger";

/** How often a single server on Postgres checks that its database answers (a cluster node: every heartbeat). */
export const DATABASE_CHECK_INTERVAL_MS = 2_000;

/** Options of {@link DatabaseCheck}. */
export interface DatabaseCheckOptions {
  /** One query on the database; it answered when this resolves within `timeoutMs`. */
  probe: () => Promise<unknown>;
  logger: Logger;
  /** The log line's message when the status changes, and fields of its own. */
  message: string;
  fields?: Record<string, unknown>;
  /** A probe that has not answered by then counts as down (default {@link DATABASE_CHECK_INTERVAL_MS}). */
  timeoutMs?: number;
}

/**
 * Whether the server's database answers, as `/readyz` says it (`database: "up" | "down"`, 503
 * while down): up until a check's query fails or does not answer in time, down until one answers
 * again, with a log line on each change. The one rule for a cluster node (checked every heartbeat,
 * `cluster/cluster-node.ts`) and a single server on Postgres (checked every 2 s, `create-server.ts`).
 *
 * @example
 * ```ts
 * const database = new DatabaseCheck({ probe: () => store.getSession(""), logger, message: "database status" });
 * const stop = database.every(DATABASE_CHECK_INTERVAL_MS);
 * ```
 */
export class DatabaseCheck {
  private answered = true;
  private running: Promise<boolean> | undefined;

  constructor(private readonly options: DatabaseCheckOptions) {}

  /** Whether the last check's query answered (true before the first). */
  get up(): boolean {
    return this.answered;
  }

  get status(): "up" | "down" {
    return this.answered ? "up" : "down";
  }

  /** Runs one check (joining one still running) and says whether the database answered. */
  check(): Promise<boolean> {
    this.running ??= this.probe().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** Checks every `intervalMs` until the returned function is called. */
  every(intervalMs: number): () => void {
    const timer = setInterval(() => void this.check(), intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  private async probe(): Promise<boolean> {
    const was = this.answered;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeoutMs = this.options.timeoutMs ?? DATABASE_CHECK_INTERVAL_MS;
    let cause: unknown;
    this.answered = await Promise.race([
      this.options.probe().then(() => true),
      new Promise<boolean>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
        timer.unref();
      }),
    ]).then(
      (answered) => answered,
      (error: unknown) => {
        cause = error;
        return false;
      },
    );
    clearTimeout(timer);
    if (was !== this.answered)
      this.options.logger[this.answered ? "info" : "warn"](this.options.message, {
        ...this.options.fields,
        database: this.status,
        ...(cause === undefined ? {} : { error: cause }),
      });
    return this.answered;
  }
}
