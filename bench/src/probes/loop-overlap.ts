// Whether two processes' event loops work at the same time or take turns, for the hosted-call
// probe: `perf record` of the main threads' entries to and exits from `epoll_wait` (where an idle
// loop waits), then the share of the window each loop spent outside it (running, or ready and
// waiting for a core) and the share both did at once. Two loops that pass each other whole batches
// take turns (both at once near 0 %); a pipeline overlaps. The load moves each share little: a
// loop waiting for a core still counts as outside `epoll_wait`. Linux only, where `perf` may read
// the syscall tracepoints.
import { execFileSync, spawn } from "node:child_process";
import { rmSync } from "node:fs";

const EVENTS = ["epoll_pwait", "epoll_wait"].flatMap((call) => [
  `syscalls:sys_enter_${call}`,
  `syscalls:sys_exit_${call}`,
]);

/** A recording in progress; `stop` ends it and resolves with the shares (0 to 1). */
export interface LoopOverlap {
  stop(): Promise<{ busy: number[]; both: number }>;
}

/** Starts recording the main threads of `pids` (two processes). */
export function startLoopOverlap(pids: [number, number]): LoopOverlap {
  const file = `/tmp/patchbay-bench-overlap-${process.pid}-${Date.now()}.data`;
  const perf = spawn("perf", ["record", "-q", "-o", file, "-e", EVENTS.join(","), "-t", pids.join(",")], {
    stdio: "ignore",
  });
  const exited = new Promise<void>((resolve) => perf.once("exit", () => resolve()));
  return {
    async stop() {
      perf.kill("SIGINT");
      await exited;
      const text = execFileSync("perf", ["script", "-i", file, "-F", "tid,time,event"], {
        maxBuffer: 1 << 30,
        stdio: ["ignore", "pipe", "ignore"],
      }).toString();
      rmSync(file, { force: true });
      // Per thread: the intervals outside epoll_wait (from an exit to the next entry).
      const busy: [number, number][][] = pids.map(() => []);
      const lastExit = pids.map(() => Number.NaN);
      let first = Number.POSITIVE_INFINITY;
      let last = 0;
      for (const line of text.split("\n")) {
        const m = /^\s*(\d+)\s+([\d.]+):\s+syscalls:sys_(enter|exit)_/.exec(line);
        if (!m) continue;
        const i = pids.indexOf(Number(m[1]));
        if (i < 0) continue;
        const t = Number(m[2]);
        first = Math.min(first, t);
        last = Math.max(last, t);
        if (m[3] === "exit") lastExit[i] = t;
        else if (!Number.isNaN(lastExit[i]!)) {
          busy[i]!.push([lastExit[i]!, t]);
          lastExit[i] = Number.NaN;
        }
      }
      const span = last - first;
      const total = (list: [number, number][]) => list.reduce((n, [a, b]) => n + (b - a), 0);
      // Both at once: walk the two sorted interval lists.
      let both = 0;
      const [a, b] = busy as [[number, number][], [number, number][]];
      for (let i = 0, j = 0; i < a.length && j < b.length; ) {
        const lo = Math.max(a[i]![0], b[j]![0]);
        const hi = Math.min(a[i]![1], b[j]![1]);
        if (hi > lo) both += hi - lo;
        if (a[i]![1] < b[j]![1]) i++;
        else j++;
      }
      return { busy: busy.map((list) => total(list) / span), both: both / span };
    },
  };
}
