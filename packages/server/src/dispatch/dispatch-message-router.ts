import type { ImageContent } from "@patchbay/protocol";
import type { MessageRouteOutcome, MessageRouteRequest, MessageRouter } from "../dispatch-seams";
import type { WorkRouter } from "./work-router";

/**
 * A message route request that may say the message carried images or video. Routing refuses
 * those: a worker receives text only.
 *
 * @example
 * ```ts
 * router.route({ ...request, images: [{ type: "image", url: "https://example.com/a.png" }] });
 * ```
 */
export type MessageRouteRequestWithMedia = MessageRouteRequest & { images?: readonly ImageContent[] };

/**
 * How many images (or videos) the user message `messageId` of a session carries. The route
 * request has the message's text only, so the router looks the item up.
 *
 * @example
 * ```ts
 * const count: MediaCounter = (sessionId, id) => conversationOf(sessionId).find((i) => i.id === id)?.images?.length ?? 0;
 * ```
 */
export type MediaCounter = (sessionId: string, messageId: string) => number | Promise<number>;

/**
 * Sends each message of a session whose agent has `dispatch: { text: enabled }` to a worker
 * first, through the {@link WorkRouter} (capacity, queue and all). It settles as `answer` as soon
 * as the worker calls `answer`, as `handled` when the worker finishes without it, and as
 * `dropped` with the reason when no worker took the message or its handler failed.
 *
 * @example
 * ```ts
 * const router = new DispatchMessageRouter(work);
 * const outcome = await router.route({ session, message, signal });
 * ```
 */
export class DispatchMessageRouter implements MessageRouter {
  readonly #work: WorkRouter;
  readonly #mediaCount: MediaCounter | undefined;

  constructor(work: WorkRouter, options: { mediaCount?: MediaCounter } = {}) {
    this.#work = work;
    this.#mediaCount = options.mediaCount;
  }

  async route(request: MessageRouteRequestWithMedia): Promise<MessageRouteOutcome> {
    const { message } = request;
    const media =
      request.images?.length ??
      (message.sessionId === null ? 0 : ((await this.#mediaCount?.(message.sessionId, message.id)) ?? 0));
    if (media > 0) {
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
