// Counts JSON.stringify calls in this process and the characters they made, for the probes: an
// exact figure of the serialization a turn costs the server, which no CPU time on this machine
// resolves. Wraps the global, so it counts every caller (ws, the store, the frames).

let calls = 0;
let chars = 0;
/** Calls by their caller's frame (with BENCH_JSON_CALLERS=1). */
const callers = new Map<string, { calls: number; chars: number }>();

/** Starts counting (once per process). */
export function countJson(): void {
  const original = JSON.stringify;
  JSON.stringify = function (this: JSON, ...args: Parameters<typeof JSON.stringify>) {
    const text = original.apply(this, args);
    calls++;
    const length = typeof text === "string" ? text.length : 0;
    chars += length;
    if (process.env.BENCH_JSON_CALLERS === "1") {
      const frame = new Error().stack?.split("\n")[2]?.trim() ?? "?";
      const entry = callers.get(frame) ?? { calls: 0, chars: 0 };
      entry.calls++;
      entry.chars += length;
      callers.set(frame, entry);
    }
    return text;
  } as typeof JSON.stringify;
}

/** The calls and characters so far. */
export function jsonCounts(): {
  calls: number;
  chars: number;
  callers: Record<string, { calls: number; chars: number }>;
} {
  return { calls, chars, callers: Object.fromEntries(callers) };
}
