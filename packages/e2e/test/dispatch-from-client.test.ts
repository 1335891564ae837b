// #22: a worker takes its server and credentials from a Client you already have
// (`new Dispatch({ client })`), or from the environment alone, and hosts tools for an agent by
// name with no Client at all (`dispatch.host("support", tools)`). Real server, real worker, real
// client on 127.0.0.1.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@patchbay/client";
import { Dispatch, DispatchError } from "@patchbay/dispatch";
import { createServer, type PatchbayServer, silentLogger } from "@patchbay/server";
import { Tools } from "@patchbay/tools";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

const apiKey = "pk_dispatch_from_client";
const secret = "sk_dispatch_from_client_secret_0123456789abcdef";
let server: PatchbayServer;
let dir: string;
const clients: Client[] = [];
const workers: Dispatch[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "patchbay-dispatch-client-"));
  server = await createServer({
    host: "127.0.0.1",
    port: 0,
    dataDir: dir,
    apiKey,
    secret,
    logger: silentLogger,
    env: {},
    agents: {
      support: {
        model: {
          provider: "scripted",
          rules: [
            {
              match: "order (?<id>\\w+)",
              toolCalls: [{ tool: "lookup_order", arguments: { order_id: "{id}" } }],
              reply: "Order: {result}",
              errorReply: "Failed: {result}",
            },
          ],
        },
      },
    },
  });
});

afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop({ timeoutMs: 1_000 })));
  for (const client of clients.splice(0)) client.close();
});

afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

function lookupTools(worker: string): Tools {
  return new Tools().register<{ order_id: string }>({
    name: "lookup_order",
    description: "Look up an order",
    parameters: { type: "object", properties: { order_id: { type: "string" } }, required: ["order_id"] },
    run: ({ order_id }) => `${order_id} shipped (${worker})`,
  });
}

async function ready(dispatch: Dispatch): Promise<void> {
  workers.push(dispatch);
  const isReady = new Promise<void>((resolve) => dispatch.once("ready", () => resolve()));
  void dispatch.run().catch(() => undefined);
  await isReady;
}

async function ask(text: string): Promise<string> {
  const client = new Client({ baseUrl: server.url, apiKey, secret, requestTimeoutMs: 5_000 });
  clients.push(client);
  const session = await client.agent("support").sessions.create({ userId: "u_1" });
  return (await session.responses.create(text)).text;
}

function errorOf(fn: () => unknown): DispatchError {
  try {
    fn();
  } catch (error) {
    if (error instanceof DispatchError) return error;
    throw error;
  }
  throw new Error("did not throw");
}

describe("new Dispatch({ client })", () => {
  it("connects with the Client's URL, key and secret, and hosts the Client's agent handle", async () => {
    const client = new Client({ baseUrl: server.url, apiKey, secret });
    clients.push(client);
    const agent = client.agent("support");
    agent.tools.register<{ order_id: string }>({
      name: "lookup_order",
      description: "Look up an order",
      parameters: { type: "object", properties: { order_id: { type: "string" } }, required: ["order_id"] },
      run: ({ order_id }) => `${order_id} shipped (from client)`,
    });
    const dispatch = new Dispatch({ client, logger: false, env: {} });
    dispatch.host(agent);
    await ready(dispatch);
    expect(await ask("order A1")).toBe("Order: A1 shipped (from client)");
  });

  it("names the missing field when the Client has no secret, or is not a Client", () => {
    const page = new Client({ baseUrl: server.url, apiKey });
    clients.push(page);
    const noSecret = errorOf(() => new Dispatch({ client: page, env: { PATCHBAY_API_SECRET: secret } }));
    expect(noSecret).toMatchObject({ code: "missing_credentials", path: "client.secret" });
    expect(noSecret.message).toMatch(/^client\.secret: the Client has no secret/);
    // An explicit secret completes it.
    expect(new Dispatch({ client: page, secret, logger: false }).workerId).toMatch(/^w_/);
    const notAClient = errorOf(() => new Dispatch({ client: { baseUrl: server.url } as never, env: {} }));
    expect(notAClient).toMatchObject({ code: "invalid_options", path: "client" });
  });
});

describe("a worker from the environment alone, hosting tools by agent name", () => {
  it("reads PATCHBAY_URL, PATCHBAY_API_KEY and PATCHBAY_API_SECRET and hosts host(name, tools) with no Client", async () => {
    const dispatch = new Dispatch({
      logger: false,
      env: { PATCHBAY_URL: server.url, PATCHBAY_API_KEY: apiKey, PATCHBAY_API_SECRET: secret },
    });
    dispatch.host("support", lookupTools("by name"), { toolTimeoutMs: 10_000 });
    await ready(dispatch);
    expect(await ask("order B2")).toBe("Order: B2 shipped (by name)");
  });

  it("names the field that is missing or wrong", () => {
    expect(errorOf(() => new Dispatch({ env: {} }))).toMatchObject({ code: "invalid_options", path: "url" });
    expect(
      errorOf(() => new Dispatch({ env: { PATCHBAY_URL: server.url, PATCHBAY_API_KEY: apiKey } })),
    ).toMatchObject({ code: "missing_credentials", path: "secret" });
    const dispatch = new Dispatch({ url: server.url, apiKey, secret, logger: false });
    expect(errorOf(() => dispatch.host("support", undefined as never))).toMatchObject({
      code: "invalid_options",
      path: "tools",
    });
  });
});
