// Preloaded (`--import`) into the server by turn-promises.ts: counts the promises the process
// makes (async_hooks' `PROMISE` resources: every `new Promise`, async call, `await` and `.then`).
// With PROMISE_SITES=1 it also counts where each was made (the first frames of its stack outside
// node's own code), which is slow: read the counts, not the time, of a run with it.
// With PROMISE_HOOK=0 it counts none. `{ promiseCount: "reset" }` on the IPC channel (no `id`, so
// the peer's own request handler ignores it) clears the sites and starts counting garbage
// collection (gc-stats.ts); `"take"` answers `{ promiseCountReply: n, sites, gc }`.
import { createHook } from "node:async_hooks";
import { startGcStats, stopGcStats } from "./gc-stats";

let promises = 0;
const sites = process.env.PROMISE_SITES === "1" ? new Map<string, number>() : undefined;

function site(): string {
  const stack = new Error().stack?.split("\n").slice(3) ?? [];
  const ours = stack.filter((line) => !line.includes("node:") && !line.includes("promise-count"));
  return ours
    .slice(0, 3)
    .map((line) =>
      line
        .trim()
        .replace(/^at /, "")
        .replace(/file:\/\/\/work\/[^ ]*?\/packages\//, ""),
    )
    .join(" < ");
}

// PROMISE_HOOK=0 counts no promises (a promise hook costs allocations of its own): garbage only.
const hook = createHook({
  init(_id, type) {
    if (type !== "PROMISE") return;
    promises++;
    if (sites) {
      const at = site();
      sites.set(at, (sites.get(at) ?? 0) + 1);
    }
  },
});
if (process.env.PROMISE_HOOK !== "0") hook.enable();

process.on("message", (message: { promiseCount?: string }) => {
  if (message?.promiseCount === "reset") {
    sites?.clear();
    startGcStats();
    process.send?.({ promiseCountReply: promises });
  } else if (message?.promiseCount === "take") {
    const top = sites ? [...sites].sort((a, b) => b[1] - a[1]).slice(0, 60) : [];
    process.send?.({ promiseCountReply: promises, sites: top, gc: stopGcStats() });
  }
});
