import { ServerError } from "../errors";
import type { Logger } from "../observability/logger";
import { lockDataDir } from "./data-dir-lock";
import { PostgresStore } from "./postgres-store";
import { SqliteStore } from "./sqlite-store";
import type { Store } from "./store";

/**
 * Picks the server's store from its options, in this order: a `store` given in code, a Postgres
 * `databaseUrl` (or `PATCHBAY_DATABASE_URL`), the SQLite `dataDir`. The one place that decides it.
 */
export async function openStore(
  options: { store?: Store; databaseUrl?: string; dataDir?: string; exclusive?: boolean; logger?: Logger },
  env: Record<string, string | undefined>,
): Promise<{ store: Store; unlock?: () => void }> {
  if (options.store) return { store: options.store };
  const url = options.databaseUrl ?? env.PATCHBAY_DATABASE_URL;
  if (url) {
    if (!/^postgres(ql)?:\/\//.test(url)) {
      throw new ServerError(
        "invalid_config",
        "databaseUrl (PATCHBAY_DATABASE_URL) must be a postgres:// or postgresql:// connection string",
      );
    }
    // A Postgres store holds its own lock (an advisory lock that dies with the process), unless
    // the server is a node of a cluster, where session leases replace it.
    return {
      store: await PostgresStore.open({
        url,
        exclusive: options.exclusive !== false,
        ...(options.logger ? { logger: options.logger } : {}),
      }),
    };
  }
  if (options.dataDir === undefined) {
    throw new ServerError(
      "invalid_config",
      "a place for data is required: dataDir (SQLite), databaseUrl (Postgres) or a store",
    );
  }
  // Two servers on one SQLite store would end each other's turns: the first one holds it.
  const unlock = lockDataDir(options.dataDir);
  try {
    return { store: new SqliteStore({ dataDir: options.dataDir }), unlock };
  } catch (error) {
    unlock();
    throw error;
  }
}

/** What a log line says about where data lives (never a password). */
export function describeStore(store: Store): string {
  if (store instanceof PostgresStore) return store.where;
  if (store instanceof SqliteStore) return store.path;
  return store.constructor?.name ?? "a custom store";
}
