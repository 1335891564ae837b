import type { MessageRouteOutcome, MessageRouteRequest, MessageRouter } from "../extensions/dispatch-seams";
import type { WorkRouter } from "./work-router";

/**
 * Sends each user message of a session whose agent has `dispatch: { text: enabled }` to a worker
 * first, through the {@link WorkRouter} (capacity, queue and all). It settles as `answer` as soon
 * as the worker calls `answer`, as `handled` when the worker finishes without it, and as
 * `dropped` with the reason when no worker took the message or its handler failed.
 */
export class DispatchMessageRouter implements MessageRouter {
  readonly #work: WorkRouter;

  constructor(work: WorkRouter) {
    this.#work = work;
  }

  async route(request: MessageRouteRequest): Promise<MessageRouteOutcome> {
    // A worker receives text only: passing the message on without its images would answer a
    // different question than the user asked.
    if (request.images.length > 0) {
      return {
        kind: "dropped",
        error: {
          code: "unsupported_content",
          message: "messages with images or video cannot be sent to a dispatch worker; send text only",
        },
      };
    }
    if (request.signal.aborted) {
      return { kind: "dropped", error: { code: "interrupted", message: "the turn was interrupted" } };
    }
    return new Promise<MessageRouteOutcome>((resolve) => {
      let settled = false;
      const settle = (outcome: MessageRouteOutcome) => {
        if (settled) return;
        settled = true;
        request.signal.removeEventListener("abort", onAbort);
        resolve(outcome);
      };
      const receipt = this.#work.submit(
        { kind: "message", message: request.message },
        {
          onAnswer: () => settle({ kind: "answer" }),
          onSettled: (outcome) => {
            if (outcome.kind === "dropped") settle({ kind: "dropped", error: outcome.error });
            else if (outcome.error) settle({ kind: "dropped", error: outcome.error });
            else settle({ kind: "handled" });
          },
        },
        request.given,
      );
      const onAbort = () => {
        // Work still waiting is withdrawn; work already on a worker finishes there, unheard.
        this.#work.withdraw(receipt.workId, { code: "interrupted", message: "the turn was interrupted" });
        settle({ kind: "dropped", error: { code: "interrupted", message: "the turn was interrupted" } });
      };
      if (receipt.status === "dropped") {
        settle({ kind: "dropped", error: receipt.error });
        return;
      }
      request.signal.addEventListener("abort", onAbort, { once: true });
    });
  }
}
