// Syscalls of processes over a stretch of work, counted by the kernel's tracepoints through
// `perf stat` (no ptrace: the processes run at their own speed, unlike under `strace -c`), for
// the hosted-call probe: how many reads, writes and waits a call costs in each process. Linux
// only, and only where `perf` may read the syscall tracepoints (root, or a low
// `perf_event_paranoid`).
import { type ChildProcess, spawn } from "node:child_process";

const EVENTS = [
  "syscalls:sys_enter_writev",
  "syscalls:sys_enter_write",
  "syscalls:sys_enter_read",
  "syscalls:sys_enter_epoll_wait",
  "syscalls:sys_enter_epoll_pwait",
  "syscalls:sys_enter_futex",
  "raw_syscalls:sys_enter",
  "context-switches",
  "task-clock",
];

/** A count in progress; `stop` ends it and resolves with each event's count (task-clock in ms). */
export interface SyscallCount {
  stop(): Promise<Map<string, number>>;
}

/** Starts counting the syscalls of `pid` (every thread of it). */
export function startSyscallCount(pid: number): SyscallCount {
  const perf: ChildProcess = spawn("perf", ["stat", "-x", ",", "-e", EVENTS.join(","), "-p", String(pid)], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let text = "";
  perf.stderr?.on("data", (chunk: Buffer) => {
    text += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => perf.once("exit", () => resolve()));
  return {
    async stop() {
      perf.kill("SIGINT");
      await exited;
      const counts = new Map<string, number>();
      for (const line of text.split("\n")) {
        const [value, , event] = line.split(",");
        if (event && value && !Number.isNaN(Number(value)))
          counts.set(event.replace(/^.*:sys_enter_?/, ""), Number(value));
      }
      return counts;
    },
  };
}

/** One line: each count divided by `calls`. */
export function perCall(counts: Map<string, number>, calls: number): string {
  const get = (name: string) => counts.get(name) ?? 0;
  const per = (name: string) => (get(name) / calls).toFixed(2);
  return `writev ${per("writev")}, write ${per("write")}, read ${per("read")}, epoll ${(
    (get("epoll_wait") + get("epoll_pwait")) / calls
  ).toFixed(2)}, futex ${per("futex")}, all ${per("")}, switches ${per("context-switches")}`;
}
