import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { AuthError } from "../errors";
import { parseBody, readJsonBody, sendError } from "./http-json";

let server: Server | undefined;
const unexpected: unknown[] = [];

afterEach(async () => {
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
  unexpected.length = 0;
});

/** A server that reads the body (limit 16 bytes), checks it has a string `text`, and echoes it. */
async function start(): Promise<string> {
  server = createServer(async (req, res) => {
    try {
      if (req.url === "/boom") throw new Error("a bug");
      if (req.url === "/auth") throw new AuthError("missing", "no credentials");
      const body = parseBody(z.strictObject({ text: z.string() }).partial(), await readJsonBody(req, 16));
      res.end(JSON.stringify(body));
    } catch (error) {
      sendError(res, error, (e) => unexpected.push(e));
    }
  });
  await new Promise<void>((resolve) => server!.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server!.address() as AddressInfo).port}`;
}

async function post(url: string, body: string): Promise<{ status: number; json: any; headers: Headers }> {
  const res = await fetch(url, { method: "POST", body });
  return { status: res.status, json: await res.json(), headers: res.headers };
}

describe("http-json", () => {
  it("reads an empty body as {} and a small one as JSON", async () => {
    const url = await start();
    expect((await post(url, "")).json).toEqual({});
    expect((await post(url, '{"text":"hi"}')).json).toEqual({ text: "hi" });
  });

  it("refuses a body over the limit, bad JSON and a field that does not fit, each with its code", async () => {
    const url = await start();
    const big = await post(url, JSON.stringify({ text: "x".repeat(64) }));
    expect([big.status, big.json.error.code]).toEqual([413, "payload_too_large"]);
    const bad = await post(url, "{nope");
    expect([bad.status, bad.json.error.code]).toEqual([400, "invalid_json"]);
    const wrong = await post(url, '{"text":3}');
    expect([wrong.status, wrong.json.error.code, wrong.json.error.path]).toEqual([
      400,
      "invalid_request",
      "text",
    ]);
    expect(unexpected).toEqual([]);
  });

  it("challenges a 401 and reports only errors that are not ServerErrors as unexpected (500)", async () => {
    const url = await start();
    const auth = await post(`${url}/auth`, "");
    expect(auth.status).toBe(401);
    expect(auth.headers.get("www-authenticate")).toBe('Bearer realm="patchbay"');
    const boom = await post(`${url}/boom`, "");
    expect([boom.status, boom.json.error.code]).toEqual([500, "internal"]);
    expect(unexpected).toHaveLength(1);
  });
});
