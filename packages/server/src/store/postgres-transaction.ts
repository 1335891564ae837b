import type { Pool, PoolClient } from "pg";

/**
 * Runs `work` in one transaction on a connection of the pool: committed when it resolves, rolled
 * back when it throws (the error goes on). The one place the Postgres store and its leases open
 * a transaction.
 */
export async function inTransaction<T>(pool: Pool, work: (client: PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  try {
    await client.query("BEGIN");
    const result = await work(client);
    await client.query("COMMIT");
    return result;
  } catch (error) {
    await client.query("ROLLBACK").catch(() => {});
    throw error;
  } finally {
    client.release();
  }
}
