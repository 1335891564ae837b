import { type Client, ToolError } from "@patchbay/client";
import { Dispatch, type DispatchOptions } from "@patchbay/dispatch";
import type { Orders } from "./orders";

/**
 * What the support-desk worker is built from.
 *
 * @example
 * ```ts
 * createSupportWorker({ client, orders, dispatch: { capacity: 4 } });
 * ```
 */
export interface SupportWorkerOptions {
  /** A backend client (API key and secret) of the same server. */
  client: Client;
  orders: Orders;
  /** Options of the `Dispatch` (capacity, url, credentials); url and credentials default to the environment. */
  dispatch: DispatchOptions;
  /** Called with what the worker does, for a log. */
  log?: (line: string) => void;
}

/**
 * The support desk's dispatch worker. It hosts `lookup_order` (over the SQLite orders table) for
 * every session of the `support` agent, and, because the agent has `dispatch: { text: enabled }`,
 * sees each message before the model does: it could route it to a human or enrich it; here it
 * logs it and lets the model answer. Messages from a channel (an SMS number posted to
 * `/v1/agents/support/inbound/messages`) get the channel's own session.
 *
 * @example
 * ```ts
 * const worker = createSupportWorker({ client, orders, dispatch: { capacity: 4 } });
 * await worker.run();
 * ```
 */
export function createSupportWorker(options: SupportWorkerOptions): Dispatch {
  const { client, orders } = options;
  const log = options.log ?? (() => undefined);
  const dispatch = new Dispatch(options.dispatch);
  const support = client.agent("support");

  support.tools.register<{ order_id: string }>({
    name: "lookup_order",
    description: "Look up an order by its number: its status and when it arrives.",
    parameters: {
      type: "object",
      properties: { order_id: { type: "string", description: "the order number, e.g. A1001" } },
      required: ["order_id"],
    },
    displayTitle: "Looking up your order",
    interruptible: true,
    run: async ({ order_id }, _signal, ctx) => {
      ctx.update(`Looking up order ${order_id}`);
      const order = orders.find(order_id);
      log(`lookup_order ${order_id} (call ${ctx.id}, attempt ${ctx.attempt}) for ${ctx.user.id}`);
      if (!order) throw new ToolError(`There is no order ${order_id}. Ask the customer to check the number.`);
      return { order_id: order.id, status: order.status, detail: order.detail, items: order.items };
    },
  });
  dispatch.host(support, { toolTimeoutMs: 30_000 });

  dispatch.onMessage(async (message) => {
    if (message.sessionId) {
      log(`message from ${message.user.id} on session ${message.sessionId}: ${JSON.stringify(message.text)}`);
      await dispatch.answer(message);
      return;
    }
    const session = await dispatch.sessionFor(message, () => client.agent("support"));
    const reply = await session.responses.create(message.text);
    log(`reply to ${message.channel?.type} ${message.channel?.id}: ${reply.text}`);
  });

  dispatch.on("state", ({ state }) => log(`worker ${state}`));
  return dispatch;
}
