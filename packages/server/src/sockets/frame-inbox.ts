// Frames of every peer socket are handled in turns, round-robin: one frame of each socket that
// has some waiting, then the next round, until the turn has used its slice (1 ms) or nothing is
// left; then the event loop reads sockets again. Handled as they were read, one read of an
// attacker's socket (up to 2 MB of refused frames and megabyte messages) held the loop for
// 100 ms and more while a healthy session's frame, read in the same poll, waited behind all of
// it. Now it waits behind at most one frame of each other socket and the rest of a slice. A
// socket with more than `maxQueuedBytes` waiting is paused (no more reads: TCP pushes back on
// its sender) until it is at or below half of that. One turn for all the frames a poll phase
// read is also what puts their changes in one group commit (sessions/group-commit.ts): a frame
// handled in its own I/O callback commits alone at the checkpoint after it (tried: at 64
// sessions a transaction per 1.7 turns instead of per 11, bench/HISTORY.md).
//
// A frame that comes alone is the exception (`mayHandleNow`): when the last turn handled at most
// one frame, no frame waits and none was handled at once since the loop last served its turns,
// the frame is handled in its read's callback. At one call in flight (a worker's result, a user's
// message) that skips the wait for the loop's next phase; under load the turns serve many frames
// each and every frame waits for them, so the group commit keeps its batches.

/** How long one turn may go on taking frames before it lets the event loop read again. */
const SLICE_MS = 1;

/** What an inbox pauses and resumes: the socket's reading. */
export interface FrameFlow {
  pause(): void;
  resume(): void;
}

/** One socket's frames waiting for their turn. */
export class FrameInbox {
  private readonly frames: Buffer[] = [];
  /** Index of the oldest waiting frame (a shifting array would copy on every frame). */
  private head = 0;
  private bytes = 0;
  private paused = false;
  private dropped = false;

  /**
   * `handle` is called with `owner` as `this`, so an owner passes its method as it is (no
   * closure per socket: an idle connection's memory is mostly what it holds).
   */
  constructor(
    private readonly scheduler: FrameScheduler,
    private readonly handle: (data: Buffer) => void,
    private readonly flow: FrameFlow,
    private readonly maxQueuedBytes: number,
    private readonly owner?: unknown,
  ) {}

  /** Takes a frame as it was read: handled at once when it comes alone (see the header), else queued. */
  push(data: Buffer): void {
    if (this.dropped) return;
    if (this.head === this.frames.length && this.scheduler.mayHandleNow()) {
      this.scheduler.handleNow(this.handle, this.owner, data);
      return;
    }
    this.frames.push(data);
    this.bytes += data.byteLength;
    if (!this.paused && this.bytes > this.maxQueuedBytes) {
      this.paused = true;
      this.flow.pause();
    }
    if (this.size === 1) this.scheduler.ready(this);
  }

  /** Handles the oldest frame; whether more are waiting. */
  runOne(): boolean {
    if (this.head >= this.frames.length) return false;
    const next = this.frames[this.head]!;
    this.frames[this.head] = EMPTY; // the inbox stops holding a handled frame's bytes
    this.head += 1;
    if (this.head === this.frames.length) {
      this.frames.length = 0;
      this.head = 0;
    }
    this.bytes -= next.byteLength;
    if (this.paused && this.bytes <= this.maxQueuedBytes / 2) {
      this.paused = false;
      this.flow.resume();
    }
    this.handle.call(this.owner, next);
    return this.size > 0;
  }

  /** Forgets every waiting frame (the socket is gone), so nothing holds their bytes. */
  drop(): void {
    this.dropped = true;
    this.frames.length = 0;
    this.head = 0;
    this.bytes = 0;
  }

  /** Frames waiting. */
  get size(): number {
    return this.frames.length - this.head;
  }

  /** Bytes waiting. */
  get queuedBytes(): number {
    return this.bytes;
  }
}

const EMPTY = Buffer.alloc(0);

/** The turns: inboxes with frames waiting, served round-robin within a slice of each loop turn. */
export class FrameScheduler {
  private queue: FrameInbox[] = [];
  /**
   * The list a round is taken from, emptied after it and reused: with one busy socket a round
   * is one frame, and a new list per round (a literal grown by its first push) was an allocation
   * per frame.
   */
  private spare: FrameInbox[] = [];
  private scheduled = false;
  /** The last turn handled at most one frame: the next frame to come alone may skip the queue. */
  private light = true;
  /** A frame was handled at once since the loop last served its turns (check phase). */
  private tookAtOnce = false;
  /** A turn is serving its rounds: a frame read meanwhile (a handler's) takes its place in them. */
  private serving = false;
  private readonly rearm = (): void => {
    this.tookAtOnce = false;
  };

  /**
   * `atOnce`: a frame that comes alone is handled in its read's callback (see the header); off,
   * every frame waits for a turn.
   */
  constructor(
    private readonly sliceMs = SLICE_MS,
    private readonly atOnce = false,
  ) {}

  /**
   * Whether a frame just read, its socket's first waiting, may be handled at once: the last turn
   * handled at most one frame, no frame waits (so it passes no one), no turn is being served, and
   * none was handled at once since the loop's last check phase (a read that holds many frames
   * has at most its first handled so; the rest wait for the turn, with every other socket's).
   */
  mayHandleNow(): boolean {
    if (!this.atOnce || !this.light || this.tookAtOnce || this.serving || this.queue.length > 0) return false;
    this.tookAtOnce = true;
    setImmediate(this.rearm);
    return true;
  }

  /** Handles a frame at once (see {@link mayHandleNow}); a throw is rethrown as a turn's is. */
  handleNow(handle: (data: Buffer) => void, owner: unknown, data: Buffer): void {
    try {
      handle.call(owner, data);
    } catch (error) {
      queueMicrotask(() => {
        throw error;
      });
    }
  }

  /** An inbox that was empty has a frame. */
  ready(inbox: FrameInbox): void {
    this.queue.push(inbox);
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => this.turn());
  }

  private turn(): void {
    this.scheduled = false;
    const deadline = performance.now() + this.sliceMs;
    let handled = 0;
    this.serving = true;
    try {
      while (this.queue.length > 0) {
        const round = this.queue;
        const next = this.spare;
        next.length = 0; // empty, unless a round was cut short by a throw
        this.queue = next;
        this.spare = round;
        for (let i = 0; i < round.length; i++) {
          const inbox = round[i]!;
          let more = false;
          try {
            more = inbox.runOne();
          } catch (error) {
            // A handler that throws loses its own frame only; the round goes on. Rethrown once
            // the turn is over, so the process sees it as it saw it before frames waited here.
            more = inbox.size > 0;
            queueMicrotask(() => {
              throw error;
            });
          }
          handled++;
          if (more) this.queue.push(inbox);
        }
        round.length = 0; // holds no inbox between turns
        if (performance.now() >= deadline) break;
      }
    } finally {
      this.serving = false;
      this.light = handled <= 1;
      if (this.queue.length > 0) this.schedule();
    }
  }
}

/** The scheduler every peer socket of this process shares: one event loop, one set of turns. */
export const sharedFrameScheduler = new FrameScheduler(SLICE_MS, true);
