// Probe: what a socket hop costs on this machine when the process it wakes has been idle. The
// floor's round trip (startRawWsFloor: a raw `ws` request/reply with a child process) one call at
// a time, back to back, and with this process sleeping or spinning between calls, in alternating
// blocks. A round trip that grows with the idle time before it is the machine waking a sleeping
// CPU (a virtual one here), which a whole turn pays on each of its four hops and a bench's
// back-to-back floor does not.
//   node --import tsx src/probes/idle-wake.ts [--calls 400] [--rounds 2]
import { startRawWsFloor } from "../raw-ws-floor";
import { summarize } from "../stats";

const arg = (name: string, fallback: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : fallback;
};
const calls = arg("calls", 400);
const rounds = arg("rounds", 2);

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const spin = (us: number) => {
  const until = process.hrtime.bigint() + BigInt(us * 1000);
  while (process.hrtime.bigint() < until);
};
const gaps: { name: string; before: () => Promise<void> | void }[] = [
  { name: "back to back", before: () => {} },
  { name: "after 1 ms asleep", before: () => sleep(1) },
  { name: "after 5 ms asleep", before: () => sleep(5) },
  { name: "after 200 µs spinning here", before: () => spin(200) },
];

const floor = await startRawWsFloor();
try {
  for (let i = 0; i < 5000; i++) await floor.call();
  for (let round = 0; round < rounds; round++) {
    for (const gap of gaps) {
      const us: number[] = [];
      for (let i = 0; i < calls; i++) {
        await gap.before();
        const start = process.hrtime.bigint();
        await floor.call();
        us.push(Number(process.hrtime.bigint() - start) / 1000);
      }
      const s = summarize(us);
      console.log(`${gap.name.padEnd(28)} round trip p50 ${s.p50.toFixed(0)} µs, p99 ${s.p99.toFixed(0)} µs`);
    }
  }
} finally {
  await floor.close();
}
process.exit(0);
