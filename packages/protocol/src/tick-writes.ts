/** The part of a Node stream that batches writes (`net.Socket`). */
interface Corkable {
  cork(): void;
  uncork(): void;
  destroy(error?: Error): void;
}

// Sockets corked in this turn of the event loop, all uncorked by one scheduled flush: first those
// whose peer starts work on what it reads (see holdWritesForTick), then the others, each in the
// order they were corked.
const leading: Corkable[] = [];
const corked: Corkable[] = [];
let flushScheduled = false;

/**
 * The most frames one socket holds in a tick before they leave in a write of their own. Without a
 * bound, a peer that answers a whole window of requests in one tick hands it over in one write,
 * and the reader starts on the first frame only once the writer has made the last: on two busy
 * processes the two then take turns instead of working at once. With it, the reader starts on the
 * first frames while the writer makes the rest, for one `writev` more per this many frames.
 */
export const FRAMES_PER_WRITE = 16;

/** Frames each socket held this tick (its first included), for {@link FRAMES_PER_WRITE}. */
const heldFrames = new Map<Corkable, number>();

/**
 * Sockets whose last write held one frame: the next frame leaves at once instead of waiting for
 * the tick's flush. A socket that sends one frame now and then (a worker's result, the server's
 * call to it, a user's message) has nothing to batch it with, and the flush waits for every
 * promise job of the cascade first. A second frame in the same tick is held as before, and makes
 * the socket batch again from its next first frame.
 */
const quiet = new WeakSet<Corkable>();
/** Quiet sockets that sent a frame at once this tick (it counts in their batch, if they make one). */
const sentAtOnce = new Set<Corkable>();
/** Sockets that reached {@link FRAMES_PER_WRITE} this tick: never quiet after it. */
const spilled = new Set<Corkable>();

function flush(): void {
  flushScheduled = false;
  // A socket corked during a flush (an uncork's write callback sending again) waits for the next.
  const first = leading.length > 0 ? leading.splice(0) : NONE;
  const rest = corked.splice(0);
  remember(first);
  remember(rest);
  heldFrames.clear();
  sentAtOnce.clear();
  spilled.clear();
  uncorkEach(first);
  uncorkEach(rest);
}

/** Notes which sockets wrote one frame in this batch (quiet) and which more. */
function remember(sockets: Corkable[]): void {
  for (const socket of sockets) {
    // Every held socket has its count; one without is taken as busy, never as quiet.
    const frames = (heldFrames.get(socket) ?? 2) + (sentAtOnce.has(socket) ? 1 : 0);
    if (frames === 1 && !spilled.has(socket)) quiet.add(socket);
    else quiet.delete(socket);
  }
}

const NONE: Corkable[] = [];

/**
 * Uncorks a socket; false when the uncork threw. The socket may then have lost frames, so its
 * connection ends as any broken one does (destroyed with the error: its owner sees `error`, then
 * `close`).
 */
function uncorkOrEnd(socket: Corkable): boolean {
  try {
    socket.uncork();
    return true;
  } catch (error) {
    socket.destroy(error instanceof Error ? error : new Error(String(error)));
    return false;
  }
}

/** Writes what a socket holds now and holds the frames after it: it stays in the tick's flush. */
function writeHeld(socket: Corkable): void {
  heldFrames.set(socket, 1);
  spilled.add(socket);
  if (uncorkOrEnd(socket)) socket.cork();
}

/**
 * Uncorks every socket, even after one threw. A throw must not end the loop: the sockets after
 * it would stay corked for good (a socket is held again only once uncorked), and every frame sent
 * to them later would never leave.
 */
function uncorkEach(sockets: Corkable[]): void {
  for (const socket of sockets) uncorkOrEnd(socket);
}

/** The `net.Socket` under a `ws` WebSocket, if it has one. */
function socketUnder(webSocket: unknown): (Partial<Corkable> & { writableCorked?: number }) | undefined {
  return (webSocket as { _socket?: Partial<Corkable> & { writableCorked?: number } } | null)?._socket;
}

// The flush runs once this turn's callback and every promise job it started are done, and then
// once more that far: a microtask queues a tick, and Node runs ticks only after the microtask
// queue is drained. Two such hops and not one, so that work another module deferred the same way
// in the same cascade (the server's group commit of the changes this cascade made, and the
// events it broadcasts) is sent in this flush too: a turn's `message.created` and the events of
// the transaction its turn queued next leave in one write instead of two. None of it waits for
// another turn of the loop (the latency of a lone frame is unchanged but for two microtasks).
const nextTick = (globalThis as { process?: { nextTick?: (run: () => void) => void } }).process?.nextTick;
// A job on a settled promise, not `queueMicrotask`: Node makes an `AsyncResource` and a bound
// function for each `queueMicrotask`, and this runs twice every tick a socket writes.
const resolved = Promise.resolve();
const hop = (run: () => void): void => {
  void resolved.then(nextTick ? () => nextTick(run) : run);
};
const schedule = (run: () => void): void => hop(() => hop(run));

/**
 * Holds the frames a `ws` WebSocket writes until this turn of the event loop ends, so the
 * frames sent in one turn leave in one `writev` instead of one syscall each. It corks the
 * `net.Socket` under the WebSocket (once per turn) and uncorks it when the turn's callback and
 * the promise jobs it started are done. A socket without one (a browser's `WebSocket`) is left alone.
 *
 * `startsWork` marks a socket whose peer starts work on what it reads (the server's socket to a
 * dispatch worker, which runs the hosted call it is sent): such sockets are written before the
 * tick's others, so the peer wakes and works while the server is still writing events to clients,
 * which only show them. Otherwise sockets are written in the order they were first held.
 *
 * A socket whose last write held a single frame is not corked for its next one: the frame leaves
 * at once, before the rest of the cascade runs, and only a second frame in the same tick is held.
 * At one call in flight each side sends one frame a tick, so it reaches the peer without waiting
 * for the flush; a socket with more to send batches again from its next tick on.
 *
 * @example
 * ```ts
 * holdWritesForTick(ws);
 * ws.send(JSON.stringify(frame));
 * holdWritesForTick(workerWs, true); // written first
 * workerWs.send(JSON.stringify(call));
 * ```
 */
export function holdWritesForTick(webSocket: unknown, startsWork = false): void {
  const raw = socketUnder(webSocket);
  if (!raw || typeof raw.cork !== "function") return;
  const held = heldFrames.get(raw as Corkable);
  if (raw.writableCorked !== 0) {
    // Corked by us this tick: one more frame joins the batch, or the batch leaves at the bound.
    // (Corked by someone else: left as it is.)
    if (held === undefined) return;
    if (held < FRAMES_PER_WRITE) heldFrames.set(raw as Corkable, held + 1);
    else writeHeld(raw as Corkable);
    return;
  }
  if (held !== undefined) {
    // Written early this tick (writeHeldNow): held again, and still in the flush's list.
    raw.cork();
    heldFrames.set(raw as Corkable, held + 1);
  } else if (quiet.has(raw as Corkable) && !sentAtOnce.has(raw as Corkable)) {
    // Left uncorked: `ws` writes the frame's header and payload in one `writev` now. The flush
    // still comes, to end the tick for this socket.
    sentAtOnce.add(raw as Corkable);
  } else {
    raw.cork();
    heldFrames.set(raw as Corkable, 1);
    (startsWork ? leading : corked).push(raw as Corkable);
  }
  if (!flushScheduled) {
    flushScheduled = true;
    schedule(flush);
  }
}

/**
 * Writes the frames `webSocket` holds for this tick now instead of at the tick's flush: for the
 * frame that ends what its peer waits for (the server's `response.completed`), so the peer reads
 * it while this process finishes the tick's other work. Frames sent to the socket later in the
 * tick are held again and leave at the flush. A socket not held by {@link holdWritesForTick} is
 * left alone.
 *
 * @example
 * ```ts
 * holdWritesForTick(ws);
 * ws.send(JSON.stringify({ type: "response.completed", responseId }));
 * writeHeldNow(ws); // leaves now, not when the tick ends
 * ```
 */
export function writeHeldNow(webSocket: unknown): void {
  const raw = socketUnder(webSocket);
  if (raw?.writableCorked === 1 && heldFrames.has(raw as Corkable)) uncorkOrEnd(raw as Corkable);
}
