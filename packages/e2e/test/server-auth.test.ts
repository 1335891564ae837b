import { PROTOCOL_VERSION } from "@patchbay/protocol";
import { createUserToken } from "@patchbay/server";
import { afterEach, describe, expect, it } from "vitest";
import { RawClient } from "./helpers/raw-client";
import { scriptedAgent, startTestServer, type TestServer } from "./helpers/start-server";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(): Promise<TestServer> {
  return startTestServer({ agents: { support: scriptedAgent([{ match: "hello", reply: "Hi." }]) } });
}

async function helloRefused(s: TestServer, auth: unknown) {
  const client = await RawClient.connect(s.wsUrl);
  client.send({ type: "hello", protocol: PROTOCOL_VERSION, auth });
  const error = await client.nextOf("error");
  const closed = await client.whenClosed();
  return { error, closed, welcomed: client.frames.some((f) => f.type === "welcome") };
}

describe("socket auth refusals", () => {
  it("refuses bad, expired and foreign tokens and a wrong API key or secret, then closes", async () => {
    server = await start();
    const cases: [string, unknown, RegExp][] = [
      ["garbage token", { kind: "user", token: "not-a-token" }, /not a valid JWT/],
      [
        "expired token",
        {
          kind: "user",
          token: await createUserToken(server.secret, "u_1", { expiresIn: 1, now: Date.now() - 10_000 }),
        },
        /expired/,
      ],
      [
        "foreign token",
        { kind: "user", token: await createUserToken("another-servers-secret", "u_1") },
        /signature/,
      ],
      [
        "wrong API key",
        { kind: "api_key", apiKey: "pk_wrong", secret: server.secret },
        /API key or secret is wrong/,
      ],
      [
        "wrong secret",
        { kind: "api_key", apiKey: server.apiKey, secret: "wrong" },
        /API key or secret is wrong/,
      ],
      ["API key without secret", { kind: "api_key", apiKey: server.apiKey }, /secret is missing/],
    ];
    for (const [name, auth, message] of cases) {
      const { error, closed, welcomed } = await helloRefused(server, auth);
      expect(error.code, name).toBe("unauthorized");
      expect(error.message, name).toMatch(message);
      expect(closed.code, name).toBe(1008);
      expect(welcomed, name).toBe(false);
    }
  });

  it("refuses any frame before hello, and a protocol it does not speak", async () => {
    server = await start();
    const early = await RawClient.connect(server.wsUrl);
    early.send({ type: "session.create", requestId: "r1", agent: "support" });
    expect(await early.nextOf("error")).toMatchObject({ code: "unauthorized", requestId: "r1" });
    expect((await early.whenClosed()).code).toBe(1008);

    const future = await RawClient.connect(server.wsUrl);
    future.send({ type: "hello", protocol: 99, auth: { kind: "user", token: await server.token("u_1") } });
    expect(await future.nextOf("error")).toMatchObject({ code: "protocol_version", path: "protocol" });
    expect((await future.whenClosed()).code).toBe(1002);
  });

  it("answers not_found for another user's session on every operation, and nothing happens to it", async () => {
    server = await start();
    const owner = await RawClient.open(server.wsUrl, { kind: "user", token: await server.token("alice") });
    const sessionId = await owner.create("support");
    owner.send({ type: "message.send", sessionId, commandId: "c_1", text: "hello" });
    await owner.turnEnd("c_1");
    const before = owner.events(sessionId).length;

    const mallory = await RawClient.open(server.wsUrl, {
      kind: "user",
      token: await server.token("mallory"),
    });
    mallory.send({ type: "session.resume", requestId: "r_1", sessionId, afterSeq: 0, tools: [] });
    expect(await mallory.nextOf("error")).toMatchObject({ code: "not_found", requestId: "r_1" });
    const frames = [
      { type: "message.send", sessionId, commandId: "m_1", text: "hello" },
      { type: "interrupt", sessionId, commandId: "m_2" },
      { type: "tools.update", sessionId, tools: [] },
      { type: "tool.progress", sessionId, callId: "x", text: "p" },
      { type: "tool.say", sessionId, callId: "x", text: "p" },
      { type: "tool.hold", sessionId, callId: "x" },
      {
        type: "tool.result",
        sessionId,
        callId: "x",
        attempt: 1,
        result: { outcome: "completed", content: { text: "", images: [] } },
      },
      { type: "approval.decide", sessionId, approvalId: "ap_x", allowed: true },
      { type: "session.close", sessionId },
    ];
    for (const frame of frames) {
      mallory.send(frame);
      const error = await mallory.nextOf("error");
      expect(error, frame.type).toMatchObject({ code: "not_found", sessionId });
    }
    // A user cannot open a session for someone else either.
    mallory.send({ type: "session.create", requestId: "r_2", agent: "support", userId: "alice" });
    expect(await mallory.nextOf("error")).toMatchObject({
      code: "forbidden",
      path: "userId",
      requestId: "r_2",
    });

    const res = await fetch(`${server.url}/v1/sessions/${sessionId}/events?after=0`, {
      headers: server.backendHeaders(),
    });
    const log = (await res.json()) as { events: unknown[] };
    expect(log.events.length).toBe(before);
    await owner.close();
    await mallory.close();
  });
});

describe("HTTP auth refusals", () => {
  it("answers 401 for bad, expired and foreign tokens and a wrong key or secret", async () => {
    server = await start();
    const url = `${server.url}/v1/agents/support/sessions?userId=u_1`;
    const headers: [string, Record<string, string>][] = [
      ["none", {}],
      ["garbage", { authorization: "Bearer garbage" }],
      [
        "expired",
        {
          authorization: `Bearer ${await createUserToken(server.secret, "u_1", { expiresIn: 1, now: Date.now() - 10_000 })}`,
        },
      ],
      ["foreign", { authorization: `Bearer ${await createUserToken("other-secret", "u_1")}` }],
      ["wrong key", { "x-api-key": "pk_nope", authorization: `Bearer ${server.secret}` }],
      ["wrong secret", { "x-api-key": server.apiKey, authorization: "Bearer nope" }],
      ["key without secret", { "x-api-key": server.apiKey }],
    ];
    for (const [name, h] of headers) {
      const res = await fetch(url, { headers: h });
      expect(res.status, name).toBe(401);
      const body = (await res.json()) as { error: { code: string; message: string } };
      expect(body.error.code, name).toBe("unauthorized");
      expect(res.headers.get("www-authenticate"), name).toContain("Bearer");
    }
  });

  it("answers 404 for another user's session on every route, 403 for listing or creating as someone else", async () => {
    server = await start();
    const alice = {
      authorization: `Bearer ${await server.token("alice")}`,
      "content-type": "application/json",
    };
    const mallory = {
      authorization: `Bearer ${await server.token("mallory")}`,
      "content-type": "application/json",
    };
    const created = await fetch(`${server.url}/v1/agents/support/sessions`, {
      method: "POST",
      headers: alice,
      body: "{}",
    });
    expect(created.status).toBe(201);
    const { id } = (await created.json()) as { id: string };
    const attempts: [string, string, unknown?][] = [
      ["GET", `/v1/sessions/${id}`],
      ["GET", `/v1/sessions/${id}/events?after=0`],
      ["POST", `/v1/sessions/${id}/messages`, { commandId: "x", text: "hello" }],
      ["POST", `/v1/sessions/${id}/interrupt`, { commandId: "y" }],
      ["DELETE", `/v1/sessions/${id}`],
    ];
    for (const [method, path, body] of attempts) {
      const res = await fetch(`${server.url}${path}`, {
        method,
        headers: mallory,
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe("not_found");
    }
    const list = await fetch(`${server.url}/v1/agents/support/sessions?userId=alice`, { headers: mallory });
    expect(list.status).toBe(403);
    const own = await fetch(`${server.url}/v1/agents/support/sessions`, { headers: mallory });
    expect(((await own.json()) as { sessions: unknown[] }).sessions).toEqual([]);
    const forged = await fetch(`${server.url}/v1/agents/support/sessions`, {
      method: "POST",
      headers: mallory,
      body: JSON.stringify({ userId: "alice" }),
    });
    expect(forged.status).toBe(403);
    // Alice's session is untouched.
    const mine = await fetch(`${server.url}/v1/sessions/${id}`, { headers: alice });
    expect(mine.status).toBe(200);
    expect(((await mine.json()) as { conversation: unknown[] }).conversation).toEqual([]);
  });
});
