import { createRequire } from "node:module";
import { Worker } from "node:worker_threads";

/** How long after a write the checkpoint thread is asked to fold the WAL back, in ms. */
export const CHECKPOINT_DELAY_MS = 100;

/**
 * WAL pages at which the server's own connection checkpoints after a commit, on the event loop.
 * The thread's passive checkpoints cannot restart a WAL that is written to without pause (see
 * {@link WalCheckpointer}); this bounds it (40 MiB at 4 KiB pages). SQLite's default is 1,000.
 */
export const WAL_BOUND_PAGES = 10_000;

/** What the thread's last checkpoint reported (`PRAGMA wal_checkpoint` of SQLite). */
export interface CheckpointResult {
  /** 1 when another connection held the checkpoint lock and nothing was copied. */
  busy: number;
  /** Pages in the WAL when it ran. */
  log: number;
  /** Pages of it now folded back into the database file. */
  checkpointed: number;
}

// The thread: its own connection to the file, a passive checkpoint per request. A passive
// checkpoint never waits for the writer and never blocks it.
const THREAD_SOURCE = `
const { parentPort, workerData } = require("node:worker_threads");
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
parentPort.on("message", (message) => {
  if (message === "close") {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const [row] = db.pragma("wal_checkpoint(PASSIVE)");
    parentPort.postMessage({ ok: true, result: row });
  } catch (error) {
    parentPort.postMessage({ ok: false, error: String((error && error.stack) || error) });
  }
});
`;

/**
 * Folds the SQLite WAL back into the database file from a worker thread, so the copy and its two
 * fsyncs do not run on the event loop. By default SQLite checkpoints in the commit that takes the
 * WAL past 1,000 pages, inside the call that committed: at a few hundred turns a second that was
 * most of the time the event loop spent in COMMIT on a disk.
 *
 * The server's connection turns its automatic checkpoint down to a bound ({@link WAL_BOUND_PAGES});
 * {@link wrote} after a commit asks the thread, at most one checkpoint at a time, for a passive
 * checkpoint {@link CHECKPOINT_DELAY_MS} later (a write while one runs asks for the next). What a checkpoint copies is already committed and
 * in the WAL, so it changes nothing about what a crash can lose. A WAL starts over from its
 * beginning only when a write begins after a checkpoint copied all of it; a server that writes
 * without pause never gives the thread that moment, so at the bound the server's connection
 * checkpoints itself, copying only the pages the thread has not (the last few hundred
 * milliseconds' worth), and the WAL restarts. If the thread cannot be started or fails, the
 * server's connection goes back to SQLite's default of 1,000 pages.
 */
export class WalCheckpointer {
  private thread: Worker | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private running = false;
  /** A write came while a checkpoint ran. */
  private again = false;
  private closed = false;
  private failure: unknown;
  private exited: Promise<void> | undefined;
  private readonly waiting: { resolve(result: CheckpointResult): void; reject(error: unknown): void }[] = [];
  /** What the thread's last checkpoint reported, if it ran one. */
  last: CheckpointResult | undefined;

  constructor(
    private readonly path: string,
    /** Called once if the thread fails; the caller checkpoints on its own connection again. */
    private readonly onFailure: (error: unknown) => void,
    /** better-sqlite3's entry file, for the thread to load; resolved from here when not given. */
    private readonly driver?: string,
  ) {}

  /** Why the thread stopped checkpointing, if it did. */
  get failed(): unknown {
    return this.failure;
  }

  /**
   * Starts the thread now rather than at the first checkpoint: the store does so when it opens,
   * so the thread is part of a server's memory from the start, not of its first sessions'.
   */
  open(): void {
    if (this.thread || this.closed || this.failure !== undefined) return;
    try {
      this.thread = this.start();
    } catch (error) {
      this.fail(error);
    }
  }

  /** A transaction was committed: a checkpoint runs soon, unless one is already coming. */
  wrote(): void {
    if (this.running) {
      // Pages committed after the running checkpoint looked at the WAL: the next one copies them.
      this.again = true;
      return;
    }
    if (this.timer !== undefined || this.closed || this.failure !== undefined) return;
    this.timer = setTimeout(() => this.run(), CHECKPOINT_DELAY_MS);
    this.timer.unref();
  }

  /** Runs a checkpoint now and resolves with what it reported (tests, and the bench's probes). */
  checkpointNow(): Promise<CheckpointResult> {
    return new Promise((resolve, reject) => {
      if (this.failure !== undefined) return reject(this.failure);
      if (this.closed) return reject(new Error("the WAL checkpointer is closed"));
      this.waiting.push({ resolve, reject });
      if (!this.running) {
        clearTimeout(this.timer);
        this.run();
      }
    });
  }

  /** Stops the thread (after the checkpoint it is running, if any) and closes its connection. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    if (!this.thread) return;
    // Someone waits for the thread now: keep the process alive until it has exited (unref'd, a
    // top-level `await server.close()` with nothing else pending ended the process with code 13).
    this.thread.ref();
    this.thread.postMessage("close");
    await this.exited;
  }

  private run(): void {
    this.timer = undefined;
    if (this.closed || this.failure !== undefined) return;
    this.open();
    if (!this.thread || this.failure !== undefined) return;
    this.running = true;
    this.again = false;
    this.thread.postMessage("checkpoint");
  }

  private start(): Worker {
    const thread = new Worker(THREAD_SOURCE, {
      eval: true,
      // Resolved here, inside open()'s try: a server bundled without a resolvable driver falls back.
      workerData: {
        driver: this.driver ?? createRequire(import.meta.url).resolve("better-sqlite3"),
        path: this.path,
      },
      // It holds a connection and answers a message now and then: a small heap is plenty.
      resourceLimits: { maxYoungGenerationSizeMb: 1, maxOldGenerationSizeMb: 16 },
    });
    // An open store does not keep the process alive, with or without a checkpoint to come.
    thread.unref();
    this.exited = new Promise((resolve) => thread.once("exit", () => resolve()));
    thread.on("message", (message: { ok: boolean; result?: CheckpointResult; error?: string }) => {
      this.running = false;
      if (!message.ok) {
        this.fail(new Error(`the WAL checkpoint thread failed: ${message.error}`));
        return;
      }
      this.last = message.result;
      for (const waiter of this.waiting.splice(0)) waiter.resolve(message.result!);
      if (this.again) {
        this.again = false;
        this.wrote();
      }
    });
    thread.on("error", (error) => this.fail(error));
    thread.once("exit", (code) => {
      if (!this.closed) this.fail(new Error(`the WAL checkpoint thread exited (code ${code})`));
    });
    return thread;
  }

  private fail(error: unknown): void {
    if (this.failure !== undefined || this.closed) return;
    this.failure = error;
    this.running = false;
    for (const waiter of this.waiting.splice(0)) waiter.reject(error);
    void this.thread?.terminate();
    this.onFailure(error);
  }
}
