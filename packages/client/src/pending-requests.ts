import type { ClientToServerFrame } from "@patchbay/protocol";
import { type ClientError, DisconnectedError, TimeoutError } from "./errors";

/** A request the server answers with `session.opened` (or an error naming its `requestId`). */
export type RequestFrame = Extract<ClientToServerFrame, { type: "session.create" | "session.resume" }>;

/** One request waiting for its answer. */
export interface PendingRequest<T, C> {
  readonly frame: RequestFrame;
  /** Written on the current socket. */
  sent: boolean;
  /** Safe to write again after a reconnect (a resume is; a create is not). */
  readonly repeatable: boolean;
  /** What the caller needs back with the answer. */
  readonly context: C;
  readonly resolve: (value: T) => void;
  readonly reject: (error: ClientError) => void;
  timer?: ReturnType<typeof setTimeout>;
}

/**
 * The requests sent over the socket and not answered yet, each bounded by a timeout, and what
 * becomes of them when the socket changes: written once it is welcomed, written again after a
 * reconnect when that is safe, and failed when it is not (the server may or may not have
 * acted on it; only the caller can decide to try again).
 */
export class PendingRequests<T, C> {
  readonly #timeoutMs: number;
  readonly #requests = new Map<string, PendingRequest<T, C>>();

  constructor(timeoutMs: number) {
    this.#timeoutMs = timeoutMs;
  }

  /** Tracks a request; it fails with a `TimeoutError` saying `what` unless answered in time. */
  add(
    frame: RequestFrame,
    options: { repeatable: boolean; context: C; what: string },
    resolve: (value: T) => void,
    reject: (error: ClientError) => void,
  ): PendingRequest<T, C> {
    const request: PendingRequest<T, C> = {
      frame,
      sent: false,
      repeatable: options.repeatable,
      context: options.context,
      resolve,
      reject,
    };
    request.timer = setTimeout(
      () =>
        this.settle(request, new TimeoutError(`${options.what} got no answer within ${this.#timeoutMs} ms`)),
      this.#timeoutMs,
    );
    this.#requests.set(frame.requestId, request);
    return request;
  }

  /** The request of that id (none for none: an error frame may name no request). */
  get(requestId: string | undefined): PendingRequest<T, C> | undefined {
    return this.#requests.get(requestId as string);
  }

  /** Answers a request (once; a request already settled or dropped is left alone). */
  settle(request: PendingRequest<T, C>, outcome: { value: T } | ClientError): void {
    if (!this.drop(request)) return;
    if ("value" in outcome) request.resolve(outcome.value);
    else request.reject(outcome);
  }

  /** Stops tracking a request without answering it; false if it was not tracked. */
  drop(request: PendingRequest<T, C>): boolean {
    const id = request.frame.requestId;
    if (this.#requests.get(id) !== request) return false;
    this.#requests.delete(id);
    clearTimeout(request.timer);
    return true;
  }

  /** A socket was welcomed: writes what is not written on it yet. */
  sendUnsent(send: (frame: RequestFrame) => boolean): void {
    for (const request of this.#requests.values()) if (!request.sent) request.sent = send(request.frame);
  }

  /**
   * The socket went away (`why`). A request `renewed` says a fresh one replaces after the next
   * welcome is dropped; one written and not repeatable fails, cut off; the rest wait for the next
   * socket.
   */
  lost(why: string, renewed: (request: PendingRequest<T, C>) => boolean): void {
    for (const request of [...this.#requests.values()]) {
      if (renewed(request)) this.drop(request);
      else if (request.sent && !request.repeatable) {
        this.settle(request, new DisconnectedError(`${request.frame.type} was cut off: ${why}`));
      } else request.sent = false;
    }
  }

  /** Fails every request with the error `fail` makes: none is made when no request waits. */
  failAll(fail: () => ClientError): void {
    for (const request of [...this.#requests.values()]) this.settle(request, fail());
  }
}
