// Probe: what opening and closing a session costs the server and the client, the work scenario 4's
// session pool does once every `TURNS_PER_SESSION` turns (a new `Client`, its socket's handshake,
// `sessions.create`, then `close`). Runs scenario 4's server process and the clients here, 16 at
// a time; prints, per round, the sessions per second and the CPU per session of the server (all
// its threads, and its main thread) and of this process.
//   node --import tsx src/probes/session-open-cost.ts [--sessions 1000] [--rounds 4]
import { Client } from "@patchbay/client";
import { spawnPeer } from "../children";
import { BENCH_API_KEY, BENCH_SECRET } from "../credentials";
import { BENCH_AGENT, BENCH_USER } from "../lookup-order";
import { procCpuUs } from "./proc-cpu";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const sessions = arg("sessions", 1000);
const rounds = arg("rounds", 4);

const server = await spawnPeer<{ url: string }>("server-process");
const url = server.ready.url;

async function openAndClose(): Promise<void> {
  const client = new Client({ baseUrl: url, apiKey: BENCH_API_KEY, secret: BENCH_SECRET });
  try {
    await client.agent(BENCH_AGENT).sessions.create({ userId: BENCH_USER.id });
  } finally {
    client.close();
  }
}

try {
  for (let round = 0; round < rounds; round++) {
    const pid = server.child.pid!;
    const before = { all: procCpuUs(pid), main: procCpuUs(pid, pid) };
    const self = process.cpuUsage();
    const start = performance.now();
    for (let i = 0; i < sessions; i += 16) {
      await Promise.all(Array.from({ length: Math.min(16, sessions - i) }, openAndClose));
    }
    const seconds = (performance.now() - start) / 1000;
    const own = process.cpuUsage(self);
    const per = (us: number) => `${Math.round(us / sessions)} µs`;
    console.log(
      `round ${round + 1}: ${Math.round(sessions / seconds)} sessions/s; CPU per session: server ${per(procCpuUs(pid) - before.all)} (its main thread ${per(procCpuUs(pid, pid) - before.main)}), client ${per(own.user + own.system)}`,
    );
  }
} finally {
  await server.kill();
}
