import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createUserToken } from "../auth/user-token";
import { createServer, type PatchbayServer } from "../create-server";
import { silentLogger } from "../observability/logger";

const apiKey = "pk_http";
const secret = "http-test-secret";
let server: PatchbayServer;
let dir: string;

const backend = {
  "x-api-key": apiKey,
  authorization: `Bearer ${secret}`,
  "content-type": "application/json",
};

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), "patchbay-http-"));
  server = await createServer({
    port: 0,
    dataDir: dir,
    apiKey,
    secret,
    logger: silentLogger,
    env: {},
    http: { maxBodyBytes: 4096, rateBurst: 40, ratePerSecond: 1 },
    agents: { support: { model: { provider: "scripted", rules: [{ match: "hello", reply: "Hi." }] } } },
  });
});
afterEach(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = backend) {
  const res = await fetch(`${server.url}${path}`, {
    method,
    headers,
    ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

async function waitForTurn(id: string, commandId: string) {
  for (let i = 0; i < 100; i++) {
    const { body } = await call("GET", `/v1/sessions/${id}/events?after=0&limit=1000`);
    if (
      body.events.some(
        (e: { type: string; commandId?: string }) =>
          e.type === "response.completed" && e.commandId === commandId,
      )
    ) {
      return body;
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("the turn did not end");
}

describe("HTTP API", () => {
  it("creates, reads, lists, messages, pages events, interrupts and deletes a session", async () => {
    const created = await call("POST", "/v1/agents/support/sessions", {
      userId: "u_1",
      metadata: { plan: "pro" },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      agent: "support",
      userId: "u_1",
      metadata: { plan: "pro" },
      lastSeq: 0,
    });
    const id = created.body.id as string;

    const sent = await call("POST", `/v1/sessions/${id}/messages`, { commandId: "c_1", text: "hello" });
    expect(sent).toMatchObject({ status: 202, body: { commandId: "c_1", duplicate: false } });
    const log = await waitForTurn(id, "c_1");
    expect(log.events[0]).toMatchObject({ type: "message.created", seq: 1, sessionId: id });
    expect(log.lastSeq).toBe(log.events.at(-1).seq);
    const page = await call("GET", `/v1/sessions/${id}/events?after=1&limit=2`);
    expect(page.body.events.map((e: { seq: number }) => e.seq)).toEqual([2, 3]);

    const again = await call("POST", `/v1/sessions/${id}/messages`, { commandId: "c_1", text: "hello" });
    expect(again.body).toEqual({ commandId: "c_1", duplicate: true });

    const got = await call("GET", `/v1/sessions/${id}`);
    expect(got.body.session.id).toBe(id);
    expect(got.body.conversation.map((item: { text: string }) => item.text)).toEqual(["hello", "Hi."]);

    await call("POST", "/v1/agents/support/sessions", { userId: "u_2" });
    const mine = await call("GET", "/v1/agents/support/sessions?userId=u_1");
    expect(mine.body.sessions.map((s: { id: string }) => s.id)).toEqual([id]);
    expect((await call("GET", "/v1/agents/support/sessions")).body.sessions.length).toBe(2);

    expect((await call("POST", `/v1/sessions/${id}/interrupt`, { commandId: "i_1" })).status).toBe(202);
    expect((await call("DELETE", `/v1/sessions/${id}`)).status).toBe(204);
    expect((await call("GET", `/v1/sessions/${id}`)).status).toBe(404);
  });

  it("lets a user token reach only its own sessions", async () => {
    const token = await createUserToken(secret, "u_9");
    const user = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    const created = await call("POST", "/v1/agents/support/sessions", {}, user);
    expect(created.body.userId).toBe("u_9");
    const other = await call("POST", "/v1/agents/support/sessions", { userId: "u_1" });
    expect((await call("GET", `/v1/sessions/${other.body.id}`, undefined, user)).status).toBe(404);
    expect((await call("GET", "/v1/agents/support/sessions", undefined, user)).body.sessions.length).toBe(1);
  });

  it("refuses bad requests with a code, a message and the field path", async () => {
    const noUser = await call("POST", "/v1/agents/support/sessions", {});
    expect(noUser).toMatchObject({
      status: 400,
      body: { error: { code: "invalid_request", path: "userId" } },
    });
    const { body } = await call("POST", "/v1/agents/support/sessions", { userId: "u_1" });
    const badText = await call("POST", `/v1/sessions/${body.id}/messages`, { commandId: "c", text: 5 });
    expect(badText).toMatchObject({
      status: 400,
      body: { error: { code: "invalid_request", path: "text" } },
    });
    const extra = await call("POST", `/v1/sessions/${body.id}/messages`, {
      commandId: "c",
      text: "x",
      nope: 1,
    });
    expect(extra.status).toBe(400);
    expect(extra.body.error.message).toMatch(/nope/);
    const notJson = await call("POST", `/v1/sessions/${body.id}/messages`, "{oops");
    expect(notJson).toMatchObject({ status: 400, body: { error: { code: "invalid_json" } } });
    const tooBig = await call("POST", `/v1/sessions/${body.id}/messages`, {
      commandId: "c",
      text: "x".repeat(5000),
    });
    expect(tooBig).toMatchObject({ status: 413, body: { error: { code: "payload_too_large" } } });
    const badQuery = await call("GET", `/v1/sessions/${body.id}/events?after=-1`);
    expect(badQuery).toMatchObject({ status: 400, body: { error: { path: "after" } } });
    expect((await call("GET", "/v1/agents/nobody/sessions")).status).toBe(404);
    expect((await call("GET", "/v1/nothing/here")).body.error.code).toBe("not_found");
    const wrongMethod = await call("PUT", `/v1/sessions/${body.id}`);
    expect(wrongMethod.status).toBe(405);
    expect(wrongMethod.headers.get("allow")).toBe("GET, DELETE");
  });

  it("answers 429 with retry-after past the rate limit", async () => {
    let limited: Awaited<ReturnType<typeof call>> | undefined;
    for (let i = 0; i < 60 && !limited; i++) {
      const res = await call("GET", "/v1/agents/support/sessions");
      if (res.status === 429) limited = res;
    }
    expect(limited?.body.error.code).toBe("rate_limited");
    expect(Number(limited?.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  });

  it("serves health, readiness and the metrics the issue names", async () => {
    expect((await call("GET", "/healthz")).body).toEqual({ status: "ok" });
    expect((await call("GET", "/readyz")).status).toBe(200);
    const metrics = await fetch(`${server.url}/metrics`);
    expect(metrics.headers.get("content-type")).toMatch(/text\/plain/);
    const text = await metrics.text();
    for (const name of [
      "patchbay_sessions_active",
      "patchbay_clients_connected",
      "patchbay_workers_connected",
      "patchbay_tool_calls_total",
      "patchbay_tool_call_duration_seconds",
      "patchbay_turn_duration_seconds",
    ]) {
      expect(text).toContain(name);
    }
  });
});
