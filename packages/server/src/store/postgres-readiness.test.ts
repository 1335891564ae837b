import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PatchbayServer } from "../create-server";
import { startTestPostgres, type TestPostgres } from "../testing/postgres-server";
import { startServerForTest } from "../testing/test-server";

// A single server (not a cluster) on a real PostgreSQL: /readyz says whether it can take work,
// by the rule a cluster node uses for its database (observability/database-check.ts) and by its
// store lock (store/postgres-lock.ts).
let postgres: TestPostgres;
beforeAll(async () => {
  postgres = await startTestPostgres();
}, 60_000);
afterAll(async () => {
  await postgres?.stop();
});

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: postgres.url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

async function readyz(server: PatchbayServer): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server.url}/readyz`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Polls /readyz until it answers `status` (the database is checked every 2 s) and `lock`. */
async function readyzUntil(server: PatchbayServer, status: number, lock = "held", ms = 10_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const answer = await readyz(server);
    if ((answer.status === status && answer.body.store_lock === lock) || Date.now() > deadline) return answer;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The backend holding the public schema's store lock. */
async function lockHolderPid(): Promise<number> {
  const { rows } = await admin((client) =>
    client.query<{ pid: number }>(
      `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted
       AND ((classid::bigint << 32) | objid::bigint) = hashtext('patchbay:public')::bigint`,
    ),
  );
  return rows[0]!.pid;
}

describe("a single server on Postgres: /readyz", () => {
  it("answers 503 naming the database while its pool cannot reach it, and 200 once it is back", async () => {
    const url = await postgres.database();
    const name = new URL(url).pathname.slice(1);
    const { server, close } = await startServerForTest({ databaseUrl: url });
    try {
      expect(await readyz(server)).toMatchObject({ status: 200, body: { status: "ready" } });
      // The database refuses new connections and the pool's are gone (its lock's stays).
      const lock = await lockHolderPid();
      await admin(async (client) => {
        await client.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
        await client.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> $2",
          [name, lock],
        );
      });
      expect(await readyzUntil(server, 503)).toEqual({
        status: 503,
        body: { status: "unavailable", database: "down", store_lock: "held" },
      });
      await admin((client) => client.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`));
      expect(await readyzUntil(server, 200)).toEqual({
        status: 200,
        body: { status: "ready", database: "up", store_lock: "held" },
      });
    } finally {
      await admin((client) => client.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`));
      await close();
    }
  }, 30_000);

  it("answers 503 for good once another server took the database while its lock was down", async () => {
    const url = await postgres.database();
    const { server, close } = await startServerForTest({ databaseUrl: url });
    const rival = new pg.Client({ connectionString: url });
    try {
      expect((await readyz(server)).status).toBe(200);
      await rival.connect();
      await rival.query("SELECT pg_terminate_backend($1)", [await lockHolderPid()]);
      await rival.query("SELECT pg_advisory_lock(hashtext('patchbay:public'))");
      expect(await readyzUntil(server, 503, "lost")).toEqual({
        status: 503,
        body: { status: "unavailable", database: "up", store_lock: "lost" },
      });
      // A session's write is refused with the typed error, not an internal one.
      const created = await fetch(`${server.url}/v1/agents/support/sessions`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-api-key": "pk_test",
          authorization: "Bearer sk_test",
        },
        body: JSON.stringify({ userId: "u_1" }),
      });
      expect(created.status).toBe(503);
      expect(((await created.json()) as { error: { code: string } }).error.code).toBe("store_lock_lost");
    } finally {
      await rival.end().catch(() => {});
      await close();
    }
  }, 30_000);
});
