import { randomUUID } from "node:crypto";
import { hostname } from "node:os";
import type { Client, PoolClient } from "pg";
import { StoreLockedError, StoreLockLostError } from "../errors";
import type { Logger } from "../observability/logger";

// The single server's hold on its Postgres store (docs/production.md, "PostgreSQL"): a session
// advisory lock on a connection of its own, and the holder row every write checks. The one place
// that decides whether this process may write.

/**
 * Where the store lock stands: `held`; `retaking` after its connection dropped (writes wait for
 * it, briefly); `lost` once another server took the database (writes fail for good).
 */
export type StoreLockStatus = "held" | "retaking" | "lost";

/** Waits between attempts to take the lock again after its connection dropped: short, then every 2 s. */
const RETAKE_DELAYS_MS = [100, 250, 500, 1_000, 2_000];
/** How long a write waits for a lock being taken again before it fails (`store_lock_lost`). */
const WRITE_WAIT_MS = 2_000;

interface HolderRow {
  token: string | null;
  pid: number;
  host: string;
  since: string;
}

/**
 * The store lock of one {@link PostgresStore} opened `exclusive`. The rule, here alone: a write
 * commits only in a transaction whose first statement finds this process's token in the
 * `patchbay_holder` row (`FOR SHARE`, so a server taking the database over waits for that commit
 * and every later write sees its row). When the lock's connection drops (the database restarted,
 * the backend was terminated) it says so in a warning and takes the lock again with a short bounded
 * backoff, writes waiting meanwhile; if another server holds the lock by then, or a write finds
 * another holder's row, the lock is `lost`: an error line says a second server took the database,
 * and every write fails with {@link StoreLockLostError} for good.
 */
export class PostgresStoreLock {
  private current: StoreLockStatus = "held";
  private client: Client;
  private token: string;
  /** Every token this lock writes starts with it: a row with another of ours is ours being replaced, not a rival's. */
  private readonly prefix: string;
  private claims = 0;
  private closed = false;
  private holder: string | undefined;
  private waiters: Array<() => void> = [];

  private constructor(
    private readonly options: LockOptions,
    client: Client,
    prefix: string,
  ) {
    this.client = client;
    this.prefix = prefix;
    this.token = `${prefix}:0`;
    this.watch(client);
  }

  /** Takes the lock, or throws a {@link StoreLockedError} naming who holds it. */
  static async take(options: LockOptions): Promise<PostgresStoreLock> {
    const prefix = randomUUID();
    const client = await claim(options, `${prefix}:0`);
    return new PostgresStoreLock(options, client, prefix);
  }

  get status(): StoreLockStatus {
    return this.current;
  }

  /**
   * Run first in every write's transaction: returns when this process holds the lock (waiting up to
   * 2 s while it is taken again), throws a {@link StoreLockLostError} when it does not.
   */
  async fence(client: PoolClient): Promise<void> {
    if (this.current === "retaking") await this.settled(WRITE_WAIT_MS);
    if (this.current !== "held") throw this.refusal();
    const { rows } = await client.query<HolderRow>(
      "SELECT token, pid, host, since FROM patchbay_holder FOR SHARE",
    );
    const row = rows[0];
    if (row?.token === this.token) return;
    // Our own row being replaced by a retake in flight: wait for it, as above.
    if (row?.token?.startsWith(`${this.prefix}:`)) throw new StoreLockLostError(this.options.where, false);
    this.lose(row ? describeHolder(row) : undefined);
    throw this.refusal();
  }

  /** Ends the lock's connection, which releases the lock. */
  async close(): Promise<void> {
    this.closed = true;
    this.wake();
    await this.client.end().catch(() => {});
  }

  private refusal(): StoreLockLostError {
    return new StoreLockLostError(this.options.where, this.current === "lost", this.holder);
  }

  private watch(client: Client): void {
    client.on("error", (error) => this.dropped(client, error));
    client.on("end", () => this.dropped(client, undefined));
  }

  private dropped(client: Client, cause: Error | undefined): void {
    if (client !== this.client || this.closed || this.current !== "held") return;
    this.current = "retaking";
    this.options.logger.warn("postgres store lock connection lost: taking the lock again, writes wait", {
      store: this.options.where,
      error: cause ?? new Error("connection ended"),
    });
    void this.retake();
  }

  private async retake(): Promise<void> {
    for (let attempt = 0; !this.closed && this.current === "retaking"; attempt++) {
      const delay = RETAKE_DELAYS_MS[Math.min(attempt, RETAKE_DELAYS_MS.length - 1)]!;
      await new Promise((resolve) => setTimeout(resolve, delay).unref());
      if (this.closed || this.current !== "retaking") return;
      const token = `${this.prefix}:${++this.claims}`;
      try {
        const client = await claim(this.options, token, this.prefix);
        if (this.closed) {
          await client.end().catch(() => {});
          return;
        }
        this.client = client;
        this.token = token;
        this.current = "held";
        this.watch(client);
        this.options.logger.info("postgres store lock taken again", {
          store: this.options.where,
          attempts: attempt + 1,
        });
        this.wake();
        return;
      } catch (error) {
        if (error instanceof StoreLockedError) return this.lose(error.holder);
        this.options.logger.debug("postgres store lock: database not reachable yet", {
          store: this.options.where,
          error,
        });
      }
    }
  }

  private lose(holder: string | undefined): void {
    if (this.current === "lost") return;
    this.current = "lost";
    this.holder = holder;
    this.options.logger.error(
      "a second Patchbay server took the database while this server's store lock was down: this server no longer writes to it and is not ready; stop one of them",
      { store: this.options.where, ...(holder ? { holder } : {}) },
    );
    this.wake();
    void this.client.end().catch(() => {});
  }

  /** Resolves once the lock is no longer being taken again, or after `ms`. */
  private settled(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.waiters.push(done);
    });
  }

  private wake(): void {
    for (const waiter of this.waiters.splice(0)) waiter();
  }
}

interface LockOptions {
  /** A new, unconnected client on the store's database and schema. */
  connect: () => Client;
  schema: string;
  /** The database URL without its password. */
  where: string;
  logger: Logger;
}

/**
 * Connects a client and takes the schema's advisory lock on it, writing this process's holder row
 * (with `token`), or throws a {@link StoreLockedError} naming who holds it, from the row the holder
 * wrote. The client is ended on any failure.
 */
async function claim(options: LockOptions, token: string, ours?: string): Promise<Client> {
  const client = options.connect();
  // Until the lock watches it: a failed connect rejects, it must not crash the process.
  client.on("error", () => {});
  try {
    await client.connect();
    const { rows } = await client.query<{ locked: boolean }>(
      "SELECT pg_try_advisory_lock(hashtext($1)) AS locked",
      [`patchbay:${options.schema}`],
    );
    await client.query("CREATE TABLE IF NOT EXISTS patchbay_holder (pid INTEGER, host TEXT, since BIGINT)");
    if (!rows[0]?.locked) {
      // `*`: the row of a server older than the token column has none.
      const row = (await client.query<HolderRow>("SELECT * FROM patchbay_holder LIMIT 1")).rows[0];
      // Our own row still there: the new holder has not written its own yet.
      const theirs = row && !(ours && row.token?.startsWith(`${ours}:`));
      throw new StoreLockedError(options.where, theirs ? describeHolder(row) : undefined);
    }
    await client.query("ALTER TABLE patchbay_holder ADD COLUMN IF NOT EXISTS token TEXT");
    // One transaction: it waits for the writes that found the previous holder's row (FOR SHARE).
    await client.query("BEGIN");
    await client.query("DELETE FROM patchbay_holder");
    await client.query("INSERT INTO patchbay_holder (pid, host, since, token) VALUES ($1, $2, $3, $4)", [
      process.pid,
      hostname(),
      Date.now(),
      token,
    ]);
    await client.query("COMMIT");
    return client;
  } catch (error) {
    await client.end().catch(() => {});
    throw error;
  }
}

function describeHolder(row: HolderRow): string {
  return `pid ${row.pid} on ${row.host}, since ${new Date(Number(row.since)).toISOString()}`;
}
