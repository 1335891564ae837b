import { LeaseLostError } from "../errors";
import type { LeaseAttempt, SessionLease, SessionLeases } from "./store";

/**
 * {@link SessionLeases} in this process's memory, for the {@link MemoryStore} (tests of several
 * nodes in one process). The same rules as the Postgres store's leases; the clock is `now`.
 */
export class MemoryLeases implements SessionLeases {
  private readonly rows = new Map<string, SessionLease>();

  constructor(private readonly now: () => number = Date.now) {}

  async acquire(sessionId: string, nodeId: string, ttlMs: number): Promise<LeaseAttempt> {
    const now = this.now();
    const row = this.rows.get(sessionId);
    if (row && row.nodeId === nodeId && row.expiresAt > now) {
      row.expiresAt = now + ttlMs;
      return { acquired: true, token: row.token, fresh: false };
    }
    if (row && row.expiresAt > now) return { acquired: false, owner: row.nodeId, expiresAt: row.expiresAt };
    const token = (row?.token ?? 0) + 1;
    this.rows.set(sessionId, { sessionId, nodeId, token, expiresAt: now + ttlMs });
    return { acquired: true, token, fresh: true };
  }

  async renew(sessionId: string, nodeId: string, token: number, ttlMs: number): Promise<boolean> {
    const row = this.rows.get(sessionId);
    if (!row || row.nodeId !== nodeId || row.token !== token) return false;
    row.expiresAt = this.now() + ttlMs;
    return true;
  }

  async release(sessionId: string, nodeId: string, token: number): Promise<void> {
    const row = this.rows.get(sessionId);
    if (row && row.nodeId === nodeId && row.token === token) row.expiresAt = 0;
  }

  async get(sessionId: string): Promise<SessionLease | undefined> {
    const row = this.rows.get(sessionId);
    return row ? { ...row } : undefined;
  }

  async expired(limit: number): Promise<SessionLease[]> {
    const now = this.now();
    return [...this.rows.values()]
      .filter((row) => row.expiresAt > 0 && row.expiresAt <= now)
      .sort((a, b) => a.expiresAt - b.expiresAt)
      .slice(0, limit)
      .map((row) => ({ ...row }));
  }

  /** Throws {@link LeaseLostError} unless the session's lease carries `token`. */
  check(sessionId: string, token: number): void {
    const row = this.rows.get(sessionId);
    if (!row) throw new LeaseLostError(sessionId, `no lease, fence ${token}`);
    if (row.token !== token)
      throw new LeaseLostError(sessionId, `fence ${token}, lease now ${row.token} on ${row.nodeId}`);
  }

  /** Forgets the session's lease (the session was deleted). */
  forget(sessionId: string): void {
    this.rows.delete(sessionId);
  }
}
