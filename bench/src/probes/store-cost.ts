// Probe: the CPU a turn's SQLite work costs the server's main thread, with nothing else in the
// process: a SqliteStore driven directly with scenario 4's changes (store-turn.ts), a lone turn
// being the command check (`hasCommand`) and the turn's two transactions, after a history of
// turns in every session (a long history makes the tables keyed by random ids large, as a server's
// are after a while). Prints, per block of turns, the main thread's CPU per turn (its checkpoint
// thread apart), and its write syscalls per turn. Alternate it between two builds in the same
// minutes and read the last blocks.
//   node --import tsx src/probes/store-cost.ts [--sessions 64] [--history 100] [--turns 2000] [--blocks 8] [--group]
// `--group` commits every session's same step in one commitMany (as the group commit does at 64
// sessions) instead of one session's turn at a time; its figures are per session's turn.
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteStore } from "@patchbay/server";
import { procCpuUs, procWrites } from "./proc-cpu";
import { seedSessions, turnChanges } from "./store-turn";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const sessions = arg("sessions", 64);
const history = arg("history", 100);
const turns = arg("turns", 2000);
const blocks = arg("blocks", 8);
const group = process.argv.includes("--group");

/** CPU time of the whole process so far (user + system), in µs. */
function processCpuUs(): number {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
}

/** CPU time of every thread but the main one (the checkpoint thread, V8's), 10 ms resolution. */
function otherThreadsUs(): number {
  let total = 0;
  for (const tid of readdirSync(`/proc/${process.pid}/task`)) {
    if (Number(tid) !== process.pid) total += procCpuUs(process.pid, Number(tid));
  }
  return total;
}

const dir = mkdtempSync(join(tmpdir(), "patchbay-store-cost-"));
const store = new SqliteStore({ dataDir: dir });
try {
  const ids = await seedSessions(store, sessions, history);

  for (let block = 0; block < blocks; block++) {
    const changes = Array.from({ length: turns }, (_, t) => {
      const sessionId = ids[t % sessions]!;
      return { sessionId, changes: turnChanges(sessionId) };
    });
    const writes = procWrites(process.pid).calls;
    const others = otherThreadsUs();
    const cpu = processCpuUs();
    if (group) {
      for (let t = 0; t < turns; t += sessions) {
        const round = changes.slice(t, t + sessions);
        for (const { sessionId, changes: c } of round)
          await store.hasCommand(sessionId, c[0]!.command!.commandId);
        for (let step = 0; step < 2; step++)
          await store.commitMany(round.map(({ sessionId, changes: c }) => ({ sessionId, change: c[step]! })));
      }
    } else {
      for (const { sessionId, changes: c } of changes) {
        await store.hasCommand(sessionId, c[0]!.command!.commandId);
        await store.commit(sessionId, c[0]!);
        await store.commit(sessionId, c[1]!);
      }
    }
    const mainUs = processCpuUs() - cpu - (otherThreadsUs() - others);
    const perTurn = mainUs / turns;
    const writesPerTurn = (procWrites(process.pid).calls - writes) / turns;
    console.log(
      `${group ? `groups of ${sessions}` : "one at a time"}, block ${block + 1}: main thread ${perTurn.toFixed(1)} µs per turn, process write syscalls ${writesPerTurn.toFixed(1)} per turn`,
    );
  }
} finally {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
}
