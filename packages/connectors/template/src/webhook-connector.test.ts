// TEMPLATE: test a connector the way it runs: prepare it from YAML-shaped entries, start it in a
// ConnectorSet, and call its tools through a ToolExecutor, against a real server on 127.0.0.1.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { ConnectorEntriesSchema, ConnectorSet, prepareConnectors } from "@patchbay/connectors";
import { ToolExecutor } from "@patchbay/tools";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookConnector } from "./webhook-connector";

const received: { auth: string | undefined; body: string }[] = [];
let server: Server;
let url: string;

beforeAll(async () => {
  server = createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    received.push({ auth: req.headers.authorization, body });
    res.writeHead(req.url === "/down" ? 503 : 200).end("ok");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

async function start(webhook: Record<string, unknown>, env: Record<string, string> = {}) {
  const entries = ConnectorEntriesSchema.parse([{ name: "team", webhook, approval: { tools: [] } }]);
  return ConnectorSet.start(prepareConnectors(entries, { kinds: [webhookConnector], env }));
}

describe("the webhook connector (template)", () => {
  it("posts the message with the token from the environment", async () => {
    const set = await start({ url: `${url}/hook`, token: "${HOOK_TOKEN}" }, { HOOK_TOKEN: "tok" });
    const result = await new ToolExecutor({ tools: set.tools }).execute({
      id: "w1",
      name: "team__send",
      arguments: { text: "Deploy done" },
    });
    expect(result.content.text).toBe("Posted.");
    expect(received.at(-1)).toEqual({ auth: "Bearer tok", body: '{"text":"Deploy done"}' });
    await set.close();
  });

  it("tells the model when the webhook fails, and refuses a bad config by its path", async () => {
    const set = await start({ url: `${url}/down` });
    const result = await new ToolExecutor({ tools: set.tools }).execute({
      id: "w2",
      name: "team__send",
      arguments: { text: "x" },
    });
    expect(result).toMatchObject({
      outcome: "failed",
      content: { text: "The webhook answered HTTP 503; the message was not posted." },
    });
    await set.close();
    await expect(start({ url: "ftp://x" })).rejects.toThrow("0.webhook.url: must be an http or https URL");
  });
});
