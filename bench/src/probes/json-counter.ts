// Counts JSON.stringify calls in this process and the characters they made, for the probes: an
// exact figure of the serialization a turn costs the server, which no CPU time on this machine
// resolves. Wraps the global, so it counts every caller (ws, the store, the frames).

let calls = 0;
let chars = 0;

/** Starts counting (once per process). */
export function countJson(): void {
  const original = JSON.stringify;
  JSON.stringify = function (this: JSON, ...args: Parameters<typeof JSON.stringify>) {
    const text = original.apply(this, args);
    calls++;
    if (typeof text === "string") chars += text.length;
    return text;
  } as typeof JSON.stringify;
}

/** The calls and characters so far. */
export function jsonCounts(): { calls: number; chars: number } {
  return { calls, chars };
}
