import { BusTimeoutError } from "../errors";
import type { Bus } from "./bus";
import { pingSubject } from "./cluster-node";

// Whether a node whose answer something waits for is still on the bus (docs/cluster.md). NATS
// answers a request nobody subscribes to with "no responders" at once, so a ping to a node whose
// process died fails at once. But for a moment after a crash nats-server may not yet have dropped
// the dead connection's subscriptions and hands it the ping (or the request itself), which then
// goes unanswered: so one ping is not enough, and the watch asks again until it is stopped.

/** Options of {@link watchOwner}. */
export interface OwnerWatchOptions {
  /** How long before the first ping (0: at once). */
  firstAfterMs: number;
  /** The time between pings, and how long each may wait for its answer. */
  everyMs: number;
  /** Called once, when the bus says nothing answers on the node's ping subject: its process is gone. */
  onGone: (error: BusTimeoutError) => void;
}

/**
 * Pings `node` on the bus until stopped, and calls `onGone` once nothing answers there. A ping
 * answered, or one timed out (a frozen node, or a ping handed to a connection nats-server has not
 * yet found dead), leads to the next. Returns `stop`.
 */
export function watchOwner(bus: Bus, node: string, options: OwnerWatchOptions): () => void {
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  // What waits for the answer keeps the process alive, not its watch.
  const later = (ms: number): void => {
    timer = setTimeout(ask, ms);
    timer.unref?.();
  };
  const ask = (): void => {
    timer = undefined;
    const asked = Date.now();
    bus.request(pingSubject(node), "", { timeoutMs: options.everyMs }).then(
      () => {
        if (!stopped) later(options.everyMs);
      },
      (error: unknown) => {
        if (stopped) return;
        if (error instanceof BusTimeoutError && error.noResponders) {
          stopped = true;
          options.onGone(error);
          return;
        }
        // Timed out, it waited `everyMs` already; a bus that refused at once (closing) waits the rest.
        const left = options.everyMs - (Date.now() - asked);
        if (left > 1) later(left);
        else ask();
      },
    );
  };
  if (options.firstAfterMs > 0) later(options.firstAfterMs);
  else ask();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

/**
 * `bus.request` to one of `node`'s subjects, watching `node` while the answer is late (from
 * `probeMs`, every `probeMs`): rejects with the watch's "no responders" `BusTimeoutError` as soon
 * as the node is found gone, else as the request does. A fast answer costs no ping.
 */
export async function requestWatched(
  bus: Bus,
  node: string,
  request: { subject: string; data: string; timeoutMs: number; probeMs: number },
): Promise<string> {
  const asked = bus.request(request.subject, request.data, { timeoutMs: request.timeoutMs });
  let stopWatch = (): void => {};
  const gone = new Promise<never>((_, reject) => {
    stopWatch = watchOwner(bus, node, {
      firstAfterMs: request.probeMs,
      everyMs: request.probeMs,
      onGone: reject,
    });
  });
  try {
    return await Promise.race([asked, gone]);
  } finally {
    stopWatch();
    // Given up on once the node is known gone, the request still times out later: not an error.
    asked.catch(() => {});
  }
}
