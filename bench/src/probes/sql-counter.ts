// Counts SQLite statements and transactions in this process, for the probes: it wraps the
// methods of better-sqlite3's Statement (the copy @patchbay/server loads), so every statement the
// store runs, its transactions' BEGIN and COMMIT included, is counted by its SQL's first word.
import { createRequire } from "node:module";

const counts = new Map<string, number>();
/** Time spent in each statement, by its SQL (with BENCH_TIME_SQL=1), in nanoseconds. */
const times = new Map<string, { n: number; ns: bigint }>();

/** Starts counting (once per process). */
export function countSql(): void {
  const require = createRequire(import.meta.resolve("@patchbay/server"));
  const Database = require("better-sqlite3") as new (
    path: string,
  ) => {
    prepare(sql: string): object;
    close(): void;
  };
  const db = new Database(":memory:");
  const proto = Object.getPrototypeOf(db.prepare("SELECT 1")) as Record<string, unknown>;
  db.close();
  for (const method of ["run", "get", "all", "iterate"]) {
    const original = proto[method] as (...args: unknown[]) => unknown;
    const timed = process.env.BENCH_TIME_SQL === "1";
    proto[method] = function (this: { source: string }, ...args: unknown[]) {
      const word = /^\s*(\w+)/.exec(this.source)?.[1]?.toUpperCase() ?? "?";
      counts.set(word, (counts.get(word) ?? 0) + 1);
      if (!timed) return original.apply(this, args);
      const start = process.hrtime.bigint();
      try {
        return original.apply(this, args);
      } finally {
        const key = word === "COMMIT" ? word : this.source.replace(/\s+/g, " ").slice(0, 70);
        const entry = times.get(key) ?? { n: 0, ns: 0n };
        entry.n++;
        entry.ns += process.hrtime.bigint() - start;
        times.set(key, entry);
      }
    };
  }
}

/** The counts so far, by the statement's first word (BEGIN, COMMIT, SAVEPOINT, INSERT, ...). */
export function sqlCounts(): Record<string, number> {
  return Object.fromEntries(counts);
}

/** Time per statement so far (with BENCH_TIME_SQL=1): calls and microseconds, by its SQL. */
export function sqlTimes(): Record<string, { n: number; us: number }> {
  return Object.fromEntries([...times].map(([sql, t]) => [sql, { n: t.n, us: Number(t.ns / 1000n) }]));
}
