import { BusTimeoutError, ServerError } from "../errors";
import type { ForwardedReply, ForwardedRequest, RequestForwarding } from "../http/forwarded-request";
import type { Logger } from "../observability/logger";
import type { Bus } from "./bus";
import { requestWatched } from "./owner-watch";

// HTTP requests about a session another node owns (docs/cluster.md, "HTTP on any node"): the node
// the request reached asks the owner over the bus (request/reply, bounded) and answers with the
// owner's status and body. The owner runs the same route as for its own callers, so the session
// keeps one writer. An owner whose process died has no subscriptions left and NATS says so at
// once ("no responders"): the caller hears `unavailable` with the lease's remaining time, after
// which the next request takes the session over wherever it lands. Right after a crash NATS may
// not have dropped the dead node's subscriptions yet and hands it the request, which then gets no
// answer: while an answer is late, the owner is watched (`owner-watch.ts`, every
// `probeIntervalMs`), and its being gone ends the wait with the same `unavailable`.

const httpSubject = (node: string) => `patchbay.node.${node}.http`;

/** Options of {@link ClusterHttp}. */
export interface ClusterHttpOptions {
  bus: Bus;
  nodeId: string;
  logger: Logger;
  /** How long the owner may take to answer a forwarded request (default 5 000 ms). */
  answerTimeoutMs?: number;
  /**
   * While an answer is late, how often to ask whether the owner's process is still on the bus
   * (default 500 ms); one that is gone ends the wait at once rather than at `answerTimeoutMs`.
   */
  probeIntervalMs?: number;
}

/** A `ServerError` whose caller may retry after `retryAfterMs` (the HTTP answer's `retry-after`). */
export class RetryLaterError extends ServerError {
  constructor(
    code: string,
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(code, message, { path: "sessionId" });
    this.name = "RetryLaterError";
  }
}

/** {@link RequestForwarding} over the cluster's bus. */
export class ClusterHttp implements RequestForwarding {
  private stop: (() => void) | undefined;
  private readonly timeoutMs: number;
  private readonly probeMs: number;

  constructor(private readonly options: ClusterHttpOptions) {
    this.timeoutMs = options.answerTimeoutMs ?? 5_000;
    this.probeMs = options.probeIntervalMs ?? 500;
  }

  async forward(owner: string, request: ForwardedRequest, leaseExpiresAt: number): Promise<ForwardedReply> {
    const sessionId = /^\/v1\/sessions\/([^/]+)/.exec(request.path)?.[1] ?? "(unknown)";
    if (this.options.bus.status !== "connected") {
      throw new RetryLaterError(
        "unavailable",
        `session ${sessionId} is served by node ${owner}, and this node lost its connection to the cluster's bus; send the request to another node`,
        1_000,
      );
    }
    const data = JSON.stringify(request);
    const started = Date.now();
    let answer: string;
    try {
      answer = await requestWatched(this.options.bus, owner, {
        subject: httpSubject(owner),
        data,
        timeoutMs: this.timeoutMs,
        probeMs: this.probeMs,
      });
    } catch (error) {
      const elapsed = Date.now() - started;
      this.options.logger.warn("the owner of a session did not answer a request passed to it", {
        sessionId,
        owner,
        method: request.method,
        elapsedMs: elapsed,
        error,
      });
      // Told by the bus, not guessed from the time taken: a timer may fire a little early.
      if (error instanceof BusTimeoutError && error.noResponders) {
        // No responders: the owner's process is gone. Its lease runs out, then any node takes over.
        const left = Math.max(0, leaseExpiresAt - Date.now());
        throw new RetryLaterError(
          "unavailable",
          `the node serving session ${sessionId} (${owner}) is gone; another node takes the session over once its lease runs out (in about ${left} ms): retry then`,
          Math.max(500, left),
        );
      }
      throw new RetryLaterError(
        "unavailable",
        `the node serving session ${sessionId} (${owner}) did not answer within ${this.timeoutMs} ms; retry (with the same commandId, a message or reply is not run twice)`,
        1_000,
      );
    }
    return JSON.parse(answer) as ForwardedReply;
  }

  serve(handler: (request: ForwardedRequest) => Promise<ForwardedReply>): void {
    this.stop?.();
    this.stop = this.options.bus.subscribe(httpSubject(this.options.nodeId), (message) => {
      let request: ForwardedRequest;
      try {
        request = JSON.parse(message.data) as ForwardedRequest;
      } catch {
        return;
      }
      void handler(request).then(
        (reply) => {
          try {
            message.reply(JSON.stringify(reply));
          } catch (error) {
            // The caller hears why rather than waiting for its timeout.
            const tooLarge = error instanceof ServerError && error.code === "payload_too_large";
            this.options.logger.error("the answer to a request another node passed here could not be sent", {
              path: request.path,
              error,
            });
            message.reply(
              JSON.stringify(
                tooLarge
                  ? {
                      status: 413,
                      body: {
                        error: {
                          code: "payload_too_large",
                          message: "the answer is too large to pass between the cluster's nodes",
                        },
                      },
                    }
                  : {
                      status: 500,
                      body: { error: { code: "internal", message: "the session's node failed to answer" } },
                    },
              ),
            );
          }
        },
        (error: unknown) => {
          this.options.logger.error("a request another node passed here failed", {
            path: request.path,
            error,
          });
          message.reply(
            JSON.stringify({
              status: 500,
              body: { error: { code: "internal", message: "the session's node failed to answer" } },
            }),
          );
        },
      );
    });
  }

  close(): void {
    this.stop?.();
    this.stop = undefined;
  }
}
