import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

// What slow readers leave behind (megabytes of unsent frames per socket) is garbage once their
// sockets are gone, but V8 collects its old space only when something allocates: a server that
// goes quiet after the attack kept hundreds of MiB resident. One full collection, soon after the
// last of them went, gives the memory back.
const DELAY_MS = 3_000;
const MIN_INTERVAL_MS = 10_000;
/** How long after a slow reader was cut off a session leaving memory still asks for a collection. */
const ARMED_MS = 120_000;

let collect: (() => void) | null | undefined;
let timer: ReturnType<typeof setTimeout> | undefined;
let last = 0;
let armedUntil = 0;

function collector(): (() => void) | null {
  if (collect !== undefined) return collect;
  const exposed = (globalThis as { gc?: () => void }).gc;
  if (typeof exposed === "function") {
    collect = exposed;
    return collect;
  }
  try {
    setFlagsFromString("--expose-gc");
    collect = runInNewContext("gc") as () => void;
  } catch {
    collect = null;
  }
  return collect;
}

/**
 * A slow reader was cut off: asks for one full collection a few seconds from now, and again
 * whenever a session leaves memory in the next two minutes (its turns may have gone on).
 */
export function afterSlowReader(): void {
  armedUntil = Date.now() + ARMED_MS;
  schedule();
}

/** A live session left memory: collects soon if a slow reader was cut off lately. */
export function afterSessionUnloaded(): void {
  if (Date.now() < armedUntil) schedule();
}

function schedule(): void {
  if (timer) clearTimeout(timer);
  const wait = Math.max(DELAY_MS, last + MIN_INTERVAL_MS - Date.now());
  timer = setTimeout(() => {
    timer = undefined;
    last = Date.now();
    collector()?.();
  }, wait);
  timer.unref();
}
