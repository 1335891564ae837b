// The one tool every scenario calls: `lookup_order`, a zod schema with one string field and a
// short text result. The raw floor sends the same frames Patchbay's worker socket carries, so the
// floor and the subject move the same bytes.
import type { HostedToolRouter } from "@patchbay/server";
import { z } from "zod";

export const LOOKUP_ORDER = {
  name: "lookup_order",
  description: "Look up an order by its number.",
  parameters: z.object({ order_id: z.string() }),
} as const;

/** The arguments every call sends. */
export const ORDER_ARGS = { order_id: "A1001" } as const;

/** The tool's short text result. */
export function lookupOrderText(orderId: string): string {
  return JSON.stringify({ order_id: orderId, status: "shipped", eta: "2 days" });
}

export const BENCH_AGENT = "support";
export const BENCH_USER = { id: "u_bench" };

/** The message of a whole turn; the scripted model's rule calls `lookup_order` for it. */
export const TURN_TEXT = "Where is order A1001?";
/** How the scripted model's reply to {@link TURN_TEXT} begins once the tool answered. */
export const TURN_REPLY_START = "Order A1001 is shipped";

/** A `hosted.call` frame as the server sends it to a worker (conversation left empty). */
export function hostedCallFrame(callId: string) {
  return {
    type: "hosted.call",
    callId,
    attempt: 1,
    agent: BENCH_AGENT,
    sessionId: "s_bench0000000000",
    tool: LOOKUP_ORDER.name,
    arguments: ORDER_ARGS,
    user: BENCH_USER,
    conversation: [],
    timeoutMs: 120_000,
  };
}

/** The `hosted.result` frame a worker answers with. */
export function hostedResultFrame(callId: string, attempt: number, orderId: string) {
  return {
    type: "hosted.result",
    callId,
    attempt,
    result: { outcome: "completed", content: { text: lookupOrderText(orderId), images: [] }, held: false },
  };
}

const NO_HANDLERS = { progress() {}, say() {}, hold: () => ({ accepted: true }), attempt() {} };

/**
 * One hosted `lookup_order` call through a router (`server.hostedTools`, a dispatch module's
 * `tools`), as the turn loop makes it once a call is validated and allowed; throws unless it
 * completed. `callId` must be new for each call.
 */
export async function callLookupOrder(router: HostedToolRouter, callId: string): Promise<void> {
  const result = await router.call(
    {
      callId,
      agent: BENCH_AGENT,
      sessionId: "s_bench0000000000",
      tool: LOOKUP_ORDER.name,
      arguments: { ...ORDER_ARGS },
      user: BENCH_USER,
      conversation: [],
      timeoutMs: 30_000,
    },
    NO_HANDLERS,
  );
  if (result.outcome !== "completed")
    throw new Error(`hosted call ${result.outcome}: ${result.content.text}`);
}
