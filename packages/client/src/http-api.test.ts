import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  AuthError,
  NotFoundError,
  ProtocolViolationError,
  RateLimitedError,
  ServerError,
  TimeoutError,
} from "./errors";
import { HttpApi } from "./http-api";
import { ScriptedServer } from "./testing/scripted-server";

let server: ScriptedServer;
let seen: Array<{ method: string; url: string; headers: Record<string, unknown>; body: string }>;

beforeEach(async () => {
  server = await ScriptedServer.start();
  seen = [];
});

afterEach(async () => {
  await server.close();
});

function api(timeoutMs?: number): HttpApi {
  return new HttpApi({
    baseUrl: server.baseUrl,
    headers: async () => ({ authorization: "Bearer tok" }),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  });
}

function answer(status: number, body?: unknown, headers: Record<string, string> = {}): void {
  server.onHttp = (req, res, text) => {
    seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: text });
    res.writeHead(status, { "content-type": "application/json", ...headers });
    res.end(body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body));
  };
}

const info = { id: "s_1", agent: "support", userId: "u_1", metadata: {}, createdAt: 1, lastSeq: 0 };

describe("HttpApi", () => {
  it("calls the agreed routes with the auth headers and JSON bodies", async () => {
    answer(201, { messageId: "m_1" });
    await expect(api().reply("s 1", { commandId: "c_1", text: "hi" })).resolves.toEqual({ messageId: "m_1" });
    answer(200, { sessions: [info] });
    await expect(api().listSessions("support", { userId: "u 1" })).resolves.toEqual([info]);
    answer(200, { session: info, conversation: [] });
    await expect(api().getSession("s_1")).resolves.toEqual({ session: info, conversation: [] });
    answer(200, { events: [], lastSeq: 4 });
    await expect(api().events("s_1", { after: 2, limit: 10 })).resolves.toEqual({ events: [], lastSeq: 4 });
    answer(204);
    await expect(api().deleteSession("s_1")).resolves.toBeUndefined();
    expect(seen.map((r) => `${r.method} ${r.url}`)).toEqual([
      "POST /v1/sessions/s%201/replies",
      "GET /v1/agents/support/sessions?userId=u%201",
      "GET /v1/sessions/s_1",
      "GET /v1/sessions/s_1/events?after=2&limit=10",
      "DELETE /v1/sessions/s_1",
    ]);
    expect(JSON.parse(seen[0]!.body)).toEqual({ commandId: "c_1", text: "hi" });
    expect(seen[0]!.headers["content-type"]).toBe("application/json");
    expect(seen.every((r) => r.headers.authorization === "Bearer tok")).toBe(true);
  });

  it("turns error bodies into typed errors with the server's code", async () => {
    answer(404, { error: { code: "not_found", message: "no session s_9" } });
    const notFound = await api()
      .getSession("s_9")
      .catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(NotFoundError);
    expect(notFound).toMatchObject({ message: "no session s_9", wireCode: "not_found" });

    answer(401, { error: { code: "unauthorized", message: "token expired" } });
    await expect(api().getSession("s_1")).rejects.toBeInstanceOf(AuthError);

    answer(400, { error: { code: "invalid_frame", message: "metadata: bad", path: "metadata" } });
    await expect(api().reply("s_1", { commandId: "c_1", text: "" })).rejects.toMatchObject({
      code: "protocol",
      path: "metadata",
    });

    answer(503, { error: { code: "internal", message: "shutting down" } });
    await expect(api().getSession("s_1")).rejects.toBeInstanceOf(ServerError);
  });

  it("retries once with fresh credentials after a 401 when they can be refreshed", async () => {
    const refreshes: boolean[] = [];
    const refreshing = new HttpApi({
      baseUrl: server.baseUrl,
      headers: async ({ refresh }) => {
        refreshes.push(refresh);
        return { authorization: refresh ? "Bearer fresh" : "Bearer stale" };
      },
      canRefreshAuth: () => true,
    });
    server.onHttp = (req, res) => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body: "" });
      const ok = req.headers.authorization === "Bearer fresh";
      res.writeHead(ok ? 200 : 401, { "content-type": "application/json" });
      res.end(
        JSON.stringify(ok ? { sessions: [] } : { error: { code: "unauthorized", message: "expired" } }),
      );
    };
    await expect(refreshing.listSessions("support")).resolves.toEqual([]);
    expect(refreshes).toEqual([false, true]);
    // Still refused with the fresh token: the error reaches the caller, no third try.
    server.onHttp = (_req, res) => {
      res.writeHead(401, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { code: "unauthorized", message: "revoked" } }));
    };
    await expect(refreshing.listSessions("support")).rejects.toBeInstanceOf(AuthError);
    expect(refreshes).toEqual([false, true, false, true]);
  });

  it("reads retry-after on 429 as milliseconds", async () => {
    answer(429, { error: { code: "rate_limited", message: "slow down" } }, { "retry-after": "3" });
    const error = await api()
      .getSession("s_1")
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RateLimitedError);
    expect((error as RateLimitedError).retryAfterMs).toBe(3000);
  });

  it("reports a body that is not JSON as a protocol error, and a silent server as a timeout", async () => {
    answer(200, "<html>");
    await expect(api().getSession("s_1")).rejects.toBeInstanceOf(ProtocolViolationError);
    server.onHttp = () => {};
    await expect(api(50).getSession("s_1")).rejects.toBeInstanceOf(TimeoutError);
  });
});
