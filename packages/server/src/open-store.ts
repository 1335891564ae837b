import { ServerError } from "./errors";
import { PostgresStore } from "./postgres-store";
import { SqliteStore } from "./sqlite-store";
import type { Store } from "./store";

/**
 * Picks the server's store from its options, in this order: a `store` given in code, a Postgres
 * `databaseUrl` (or `PATCHBAY_DATABASE_URL`), the SQLite `dataDir`. The one place that decides it.
 */
export async function openStore(
  options: { store?: Store; databaseUrl?: string; dataDir?: string },
  env: Record<string, string | undefined>,
): Promise<Store> {
  if (options.store) return options.store;
  const url = options.databaseUrl ?? env.PATCHBAY_DATABASE_URL;
  if (url) {
    if (!/^postgres(ql)?:\/\//.test(url)) {
      throw new ServerError(
        "invalid_config",
        "databaseUrl (PATCHBAY_DATABASE_URL) must be a postgres:// or postgresql:// connection string",
      );
    }
    return PostgresStore.open({ url });
  }
  if (options.dataDir === undefined) {
    throw new ServerError(
      "invalid_config",
      "a place for data is required: dataDir (SQLite), databaseUrl (Postgres) or a store",
    );
  }
  return new SqliteStore({ dataDir: options.dataDir });
}

/** What a log line says about where data lives (never a password). */
export function describeStore(store: Store): string {
  if (store instanceof PostgresStore) return store.where;
  if (store instanceof SqliteStore) return store.path;
  return store.constructor?.name ?? "a custom store";
}
