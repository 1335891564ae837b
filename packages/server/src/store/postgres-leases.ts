import type { Pool } from "pg";
import { inTransaction } from "./postgres-transaction";
import type { LeaseAttempt, SessionLease, SessionLeases } from "./store";

// The session leases of PostgresStore (docs/cluster.md), on the `session_leases` table. Every
// time is the database's clock, so the nodes' own clocks never have to agree.
const NOW = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

interface LeaseRow {
  session_id: string;
  node_id: string;
  token: string;
  expires_at: string;
}

function toLease(row: LeaseRow): SessionLease {
  return {
    sessionId: row.session_id,
    nodeId: row.node_id,
    token: Number(row.token),
    expiresAt: Number(row.expires_at),
  };
}

/** {@link SessionLeases} on the Postgres store's pool. */
export class PostgresLeases implements SessionLeases {
  constructor(private readonly pool: Pool) {}

  async acquire(sessionId: string, nodeId: string, ttlMs: number): Promise<LeaseAttempt> {
    return inTransaction(this.pool, async (client) => {
      // The row exists from now on (token 0, expired), so the row lock below serializes every
      // node that races for the session, a first acquire included.
      await client.query(
        "INSERT INTO session_leases (session_id, node_id, token, expires_at) VALUES ($1, '', 0, 0) ON CONFLICT DO NOTHING",
        [sessionId],
      );
      const { rows } = await client.query<LeaseRow & { now: string }>(
        `SELECT session_id, node_id, token, expires_at, ${NOW} AS now FROM session_leases WHERE session_id = $1 FOR UPDATE`,
        [sessionId],
      );
      const row = rows[0]!;
      const now = Number(row.now);
      const live = Number(row.expires_at) > now;
      if (live && row.node_id !== nodeId) {
        return { acquired: false, owner: row.node_id, expiresAt: Number(row.expires_at) };
      }
      const token = live ? Number(row.token) : Number(row.token) + 1;
      await client.query(
        "UPDATE session_leases SET node_id = $2, token = $3, expires_at = $4 WHERE session_id = $1",
        [sessionId, nodeId, token, now + ttlMs],
      );
      return { acquired: true, token, fresh: !live };
    });
  }

  async renew(sessionId: string, nodeId: string, token: number, ttlMs: number): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE session_leases SET expires_at = ${NOW} + $4 WHERE session_id = $1 AND node_id = $2 AND token = $3`,
      [sessionId, nodeId, token, ttlMs],
    );
    return (rowCount ?? 0) > 0;
  }

  async release(sessionId: string, nodeId: string, token: number): Promise<void> {
    await this.pool.query(
      "UPDATE session_leases SET expires_at = 0 WHERE session_id = $1 AND node_id = $2 AND token = $3",
      [sessionId, nodeId, token],
    );
  }

  async get(sessionId: string): Promise<SessionLease | undefined> {
    const { rows } = await this.pool.query<LeaseRow>(
      "SELECT session_id, node_id, token, expires_at FROM session_leases WHERE session_id = $1 AND token > 0",
      [sessionId],
    );
    return rows[0] ? toLease(rows[0]) : undefined;
  }

  async expired(limit: number): Promise<SessionLease[]> {
    const { rows } = await this.pool.query<LeaseRow>(
      `SELECT session_id, node_id, token, expires_at FROM session_leases
       WHERE expires_at > 0 AND expires_at <= ${NOW} ORDER BY expires_at LIMIT $1`,
      [Math.max(1, Math.min(limit, 10_000))],
    );
    return rows.map(toLease);
  }
}
