// Marks for page-tail.ts, in whichever process loads this module (the server's, and the page's
// through `--import`): every socket write, uncork and chunk read, each garbage collection (start
// and end), and in the page, what it marked when asked (IPC `{ type: "tail-dump" }`). Times are
// `process.hrtime` (CLOCK_MONOTONIC), the same clock in both processes.
import net from "node:net";
import { PerformanceObserver } from "node:perf_hooks";

/** A mark: what, and when (ns, monotonic). */
export type Mark = [string, number];

export const marks: Mark[] = [];
export const gcs: [kind: string, start: number, end: number][] = [];
const ns = () => Number(process.hrtime.bigint());
/** performance.now() (ms) to hrtime (ns). */
const offset = ns() - performance.now() * 1e6;

let on = true;
/** Stops or starts marking. */
export function marking(value: boolean): void {
  on = value;
}

const write = net.Socket.prototype.write;
net.Socket.prototype.write = function (this: net.Socket, ...args: unknown[]) {
  if (on) marks.push(["write", ns()]);
  return (write as (...a: unknown[]) => boolean).apply(this, args);
} as typeof write;
const emit = net.Socket.prototype.emit;
net.Socket.prototype.emit = function (this: net.Socket, event: string | symbol, ...args: unknown[]) {
  if (on && event === "data") marks.push(["read", ns()]);
  return (emit as (...a: unknown[]) => boolean).call(this, event, ...args);
} as typeof emit;
const uncork = net.Socket.prototype.uncork;
net.Socket.prototype.uncork = function (this: net.Socket) {
  if (on) marks.push(["uncork", ns()]);
  return uncork.call(this);
};

const kinds: Record<number, string> = { 1: "minor", 2: "major", 4: "incremental", 8: "weakcb", 16: "minor" };
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    const kind = (entry as unknown as { detail?: { kind?: number } }).detail?.kind ?? 0;
    const start = offset + entry.startTime * 1e6;
    gcs.push([kinds[kind] ?? String(kind), start, start + entry.duration * 1e6]);
  }
}).observe({ entryTypes: ["gc"] });

if (process.send) {
  process.on("message", (message: { type?: string }) => {
    if (message?.type === "tail-clear") {
      marks.length = 0;
      gcs.length = 0;
    }
    if (message?.type === "tail-dump") process.send!({ type: "tail-marks", marks, gcs });
  });
}
