// CPU time of a process in microseconds (user + system), from /proc/<pid>/stat (Linux).
import { readFileSync } from "node:fs";

const TICK_US = 10_000; // USER_HZ is 100 on Linux

/** User + system CPU time of `pid` (or of its `thread`: the main thread's id is the pid) so far, in microseconds (10 ms resolution). */
export function procCpuUs(pid: number, thread?: number): number {
  const stat = readFileSync(
    thread === undefined ? `/proc/${pid}/stat` : `/proc/${pid}/task/${thread}/stat`,
    "utf8",
  );
  // Fields after the command name (which may hold spaces) start after its closing parenthesis.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * TICK_US;
}

/** System (kernel) CPU time of `pid` so far, in microseconds (10 ms resolution). */
export function procSystemCpuUs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[12]) * TICK_US;
}

/** Minor page faults of `pid` so far (pages the kernel mapped on first touch). */
export function procMinorFaults(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[7]);
}

/** Write syscalls and bytes written so far by `pid` (sockets and files alike), from /proc/<pid>/io. */
export function procWrites(pid: number): { calls: number; bytes: number } {
  const io = readFileSync(`/proc/${pid}/io`, "utf8");
  const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)`, "m").exec(io)?.[1] ?? 0);
  return { calls: field("syscw"), bytes: field("wchar") };
}
