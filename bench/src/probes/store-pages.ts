// Probe: the WAL frames (pages) each of a turn's three transactions writes in the SQLite store,
// and which table or index each page belongs to. Drives a SqliteStore directly with the changes a
// turn of scenario 4 commits (the message with its command and queued turn; the turn running with
// its call pending and running; the call's end with the reply and the turn's end), after ten such
// turns in each of 64 sessions. Counts exactly, so the machine's load does not move it.
//   node --import tsx src/probes/store-pages.ts [--turns 20] [--sessions 64] [--history 10] [--apart]
// `--history` is the turns each session had before the count: the tables keyed by a random id
// (a turn's response id) are as large as every turn ever run, so a short history undercounts them.
// Since the message's change and the turn's first share a transaction (the message's command id is
// checked before its turn starts), a turn is two transactions; `--apart` writes the first two
// changes apart, as the server did before. One at a time: each transaction alone, its pages named. In groups: every session's same step in
// one commitMany (as the group commit writes 64 sessions' changes of one event-loop turn).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteStore } from "@patchbay/server";
import { seedSessions, turnChanges } from "./store-turn";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const turns = arg("turns", 20);
const sessions = arg("sessions", 64);
const history = arg("history", 10);
const apart = process.argv.includes("--apart");

interface Db {
  pragma(source: string): unknown;
  prepare(source: string): { all(): unknown[] };
}

const dir = mkdtempSync(join(tmpdir(), "patchbay-store-pages-"));
const store = new SqliteStore({ dataDir: dir });
const db = (store as unknown as { db: Db }).db;

/** Copies the WAL into the file; the next write starts it over, so the next count is its frames. */
const walFrames = (): number => (db.pragma("wal_checkpoint(PASSIVE)") as { log: number }[])[0]!.log;

/** The B-tree (table or index) of each frame now in the WAL, in order. */
function framePages(): string[] {
  const names = new Map(
    (db.prepare("SELECT name, pageno FROM dbstat").all() as { name: string; pageno: number }[]).map((r) => [
      r.pageno,
      r.name,
    ]),
  );
  const wal = readFileSync(`${store.path}-wal`);
  const pageSize = wal.readUInt32BE(8);
  const salts = [wal.readUInt32BE(16), wal.readUInt32BE(20)];
  const pages: string[] = [];
  for (let at = 32; at + 24 + pageSize <= wal.length; at += 24 + pageSize) {
    if (wal.readUInt32BE(at + 8) !== salts[0] || wal.readUInt32BE(at + 12) !== salts[1]) break;
    const page = wal.readUInt32BE(at);
    pages.push(names.get(page) ?? `page ${page}`);
  }
  return pages;
}

try {
  const ids = await seedSessions(store, sessions, history, apart);
  walFrames();

  const steps = apart ? 3 : 2;
  const alone = Array.from({ length: steps }, () => 0);
  for (let t = 0; t < turns; t++) {
    const sessionId = ids[t % sessions]!;
    const changes = turnChanges(sessionId, apart);
    for (let step = 0; step < steps; step++) {
      walFrames();
      await store.commit(sessionId, changes[step]!);
      if (t === turns - 1) console.log(`  transaction ${step + 1}: ${framePages().join(", ")}`);
      alone[step]! += walFrames();
    }
  }
  const perTurn = (counts: number[], of: number) =>
    `${counts.map((c) => (c / of).toFixed(2)).join(" / ")} (a turn: ${(counts.reduce((a, b) => a + b) / of).toFixed(2)})`;
  console.log(`one at a time: WAL frames per transaction ${perTurn(alone, turns)}`);

  const grouped = Array.from({ length: steps }, () => 0);
  const rounds = Math.max(1, Math.ceil(turns / 4));
  for (let t = 0; t < rounds; t++) {
    const changes = ids.map((sessionId) => turnChanges(sessionId, apart));
    for (let step = 0; step < steps; step++) {
      walFrames();
      await store.commitMany(ids.map((sessionId, i) => ({ sessionId, change: changes[i]![step]! })));
      grouped[step]! += walFrames();
    }
  }
  console.log(
    `${sessions} sessions in a group: WAL frames per session's transaction ${perTurn(grouped, rounds * sessions)}`,
  );
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
