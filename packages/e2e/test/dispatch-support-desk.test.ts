import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, createUserToken } from "@patchbay/client";
import type { Dispatch } from "@patchbay/dispatch";
import { createServer, type PatchbayServer, silentLogger } from "@patchbay/server";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { chat } from "../../../apps/support-desk/src/chat-script";
import { type Orders, openOrders } from "../../../apps/support-desk/src/orders";
import { createSupportWorker } from "../../../apps/support-desk/src/support-worker";

const appDir = join(import.meta.dirname, "../../../apps/support-desk");
let dir: string;
let server: PatchbayServer;
let client: Client;
let orders: Orders;
let worker: Dispatch;
const log: string[] = [];

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "support-desk-e2e-"));
  server = await createServer({
    port: 0,
    dataDir: join(dir, "server"),
    configDir: appDir,
    apiKey: "pk_desk",
    secret: "sk_desk",
    logger: silentLogger,
    // No `dispatch` option: an embedded server takes workers by default.
  });
  client = new Client({ baseUrl: server.url, apiKey: "pk_desk", secret: "sk_desk" });
  orders = openOrders(join(dir, "orders.sqlite"));
  log.length = 0;
  worker = createSupportWorker({
    client,
    orders,
    dispatch: { capacity: 4, url: server.url, apiKey: "pk_desk", secret: "sk_desk", env: {} },
    log: (line) => log.push(line),
  });
  void worker.run();
  await new Promise<void>((resolve) => worker.once("ready", () => resolve()));
});

afterEach(async () => {
  await worker.stop({ timeoutMs: 1_000 });
  client.close();
  await server.close();
  orders.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("apps/support-desk", () => {
  it("answers order questions through the worker's lookup_order over its SQLite table", async () => {
    // The customer chats with a user token: only a user's message goes to the worker first (the
    // backend's, sent with the API key, would go straight to the model).
    const customer = new Client({ baseUrl: server.url });
    customer.setUser({ id: "u_ada" }, await createUserToken("sk_desk", "u_ada", { expiresIn: "10m" }));
    const replies = await chat(
      customer,
      "u_ada",
      ["Where is order A1001?", "What about order Z9999?"],
      () => undefined,
    );
    expect(replies).toEqual([
      "Order A1001 is shipped: it left the warehouse and arrives Thursday",
      "Sorry, I could not find that order. Could you check the order number?",
    ]);
    customer.close();
    // The worker saw each message first (dispatch.text), then ran the lookups.
    expect(log.filter((line) => line.startsWith("message from u_ada"))).toHaveLength(2);
    expect(log.filter((line) => line.startsWith("lookup_order"))).toHaveLength(2);
  });

  it("replies to an SMS posted to the inbound endpoint on the channel's own session", async () => {
    const res = await fetch(`${server.url}/v1/agents/support/inbound/messages`, {
      method: "POST",
      headers: {
        "x-api-key": "pk_desk",
        authorization: "Bearer sk_desk",
        "content-type": "application/json",
      },
      body: JSON.stringify({
        channel: { type: "sms", id: "+15550100" },
        userId: "u_grace",
        text: "order B2001?",
      }),
    });
    expect(res.status).toBe(202);
    for (let i = 0; i < 200 && !log.some((line) => line.startsWith("reply to sms")); i++) {
      await new Promise((r) => setTimeout(r, 25));
    }
    expect(log).toContain("reply to sms +15550100: Order B2001 is delivered: it was delivered on Monday");
  });
});
