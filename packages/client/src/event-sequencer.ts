import type { SessionEvent } from "@patchbay/protocol";
import { ProtocolViolationError } from "./errors";
import type { EventPage } from "./http-api";

/** Events waiting for a gap in the sequence to be filled; a server bug must not grow it forever. */
const MAX_BUFFERED_EVENTS = 10_000;

/** What an {@link EventSequencer} works for: one session's events, applied in order. */
export interface SequencerTarget {
  readonly sessionId: string;
  /** Applies the next event (its `seq` is the last applied plus one, or after a reported hole). */
  apply(event: SessionEvent): void;
  /** The session's events after `after`, from the server's event log. */
  fetchAfter(after: number): Promise<EventPage>;
  /** A hole the log could not fill, reported instead of stalling the session. */
  report(error: ProtocolViolationError): void;
}

/**
 * Puts a session's events in order and applies each exactly once: a replayed or repeated event
 * is dropped, and a gap in the sequence (an event that skipped ahead) is filled from the event
 * log over HTTP before what arrived meanwhile is applied.
 */
export class EventSequencer {
  readonly #target: SequencerTarget;
  #lastSeq = 0;
  #filling = false;
  #stopped = false;
  readonly #buffered = new Map<number, SessionEvent>();

  constructor(target: SequencerTarget) {
    this.#target = target;
  }

  /** The sequence number of the last event applied. */
  get lastSeq(): number {
    return this.#lastSeq;
  }

  /** An event from the socket. */
  push(event: SessionEvent): void {
    if (this.#stopped || event.seq <= this.#lastSeq) return;
    if (event.seq > this.#lastSeq + 1 || this.#filling) {
      if (this.#buffered.size < MAX_BUFFERED_EVENTS) this.#buffered.set(event.seq, event);
      if (!this.#filling) void this.#fillGap();
      return;
    }
    this.#apply(event);
  }

  /** The session went away: nothing more is applied. */
  stop(): void {
    this.#stopped = true;
    this.#buffered.clear();
  }

  #apply(event: SessionEvent): void {
    this.#lastSeq = event.seq;
    this.#target.apply(event);
  }

  /** Fetches the missing events over HTTP, then applies what was buffered, in order. */
  async #fillGap(): Promise<void> {
    const target = this.#target;
    this.#filling = true;
    try {
      const page = await target.fetchAfter(this.#lastSeq);
      for (const event of page.events)
        if (event.seq === this.#lastSeq + 1 && !this.#stopped) this.#apply(event);
    } catch (error) {
      target.report(
        new ProtocolViolationError(`events after ${this.#lastSeq} are missing and could not be fetched`, {
          cause: error,
        }),
      );
    } finally {
      this.#filling = false;
    }
    const pending = [...this.#buffered.values()].sort((a, b) => a.seq - b.seq);
    this.#buffered.clear();
    for (const event of pending) {
      if (this.#stopped || event.seq <= this.#lastSeq) continue;
      if (event.seq !== this.#lastSeq + 1) {
        // Still a hole after asking the log: report it rather than stall the session.
        target.report(
          new ProtocolViolationError(
            `events ${this.#lastSeq + 1}..${event.seq - 1} of session ${target.sessionId} are lost`,
          ),
        );
      }
      this.#apply(event);
    }
  }
}
