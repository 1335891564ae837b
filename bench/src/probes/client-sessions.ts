// Probe: what opening and closing a session costs the client process against the real server,
// as scenario 4's session pool does every 10 turns: a `Client`, its socket (`ws`, the HTTP
// upgrade), `hello`, `session.create`, and `client.close()` with its closing handshake. Prints
// the client's CPU per session (this process, `process.cpuUsage`) and the server's (`/proc`),
// `--in-flight` at once. `--entry <path of a built index.js, e.g. main's>` runs another build
// of `@patchbay/client` for an A/B in the same minutes.
// `--profile <file>` samples this process over the last round (`profile-top.ts` reads it).
//   node --import tsx src/probes/client-sessions.ts [--sessions 3000] [--in-flight 64] [--rounds 4] [--entry <path>]
import { spawnPeer } from "../children";
import { BENCH_API_KEY, BENCH_SECRET } from "../credentials";
import { BENCH_AGENT, BENCH_USER } from "../lookup-order";
import { startCpuSampling, stopCpuSampling } from "./cpu-sampling";
import { procCpuUs } from "./proc-cpu";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const entryAt = process.argv.indexOf("--entry");
const entry = entryAt > 0 ? process.argv[entryAt + 1]! : "@patchbay/client";
const sessions = arg("sessions", 3000);
const inFlight = arg("in-flight", 64);
const rounds = arg("rounds", 4);
const profileAt = process.argv.indexOf("--profile");
const profileFile = profileAt > 0 ? process.argv[profileAt + 1] : undefined;

const { Client } = (await import(entry)) as typeof import("@patchbay/client");
const server = await spawnPeer<{ url: string }>("server-process");
const url = server.ready.url;

async function block(n: number): Promise<void> {
  let left = n;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (left > 0) {
        left--;
        const client = new Client({ baseUrl: url, apiKey: BENCH_API_KEY, secret: BENCH_SECRET });
        await client.agent(BENCH_AGENT).sessions.create({ userId: BENCH_USER.id });
        client.close();
      }
    }),
  );
}

try {
  await block(Math.min(sessions, 2000));
  for (let round = 0; round < rounds; round++) {
    const serverBefore = procCpuUs(server.child.pid!);
    const self = process.cpuUsage();
    const profiled = profileFile !== undefined && round === rounds - 1;
    if (profiled) await startCpuSampling();
    const start = performance.now();
    await block(sessions);
    const seconds = (performance.now() - start) / 1000;
    const used = process.cpuUsage(self);
    if (profiled) await stopCpuSampling(profileFile);
    const serverUs = procCpuUs(server.child.pid!) - serverBefore;
    console.log(
      `${sessions} sessions, ${inFlight} at once: ${Math.round(sessions / seconds)}/s; CPU per session: client ${Math.round((used.user + used.system) / sessions)} µs, server ${Math.round(serverUs / sessions)} µs`,
    );
  }
} finally {
  await server.kill();
}
process.exit(0);
