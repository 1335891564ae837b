import { jwtVerify } from "jose";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { Client } from "./client-node";
import { AuthError, DisconnectedError, TimeoutError } from "./errors";
import { ScriptedServer } from "./testing/scripted-server";
import { createUserToken } from "./user-token";

let server: ScriptedServer;
const clients: Client[] = [];

beforeEach(async () => {
  server = await ScriptedServer.start();
});

afterEach(async () => {
  for (const client of clients.splice(0)) client.close();
  await server.close();
});

function track(client: Client): Client {
  clients.push(client);
  return client;
}

describe("Client", () => {
  it("mints user tokens on a backend and refuses without the secret", async () => {
    const backend = track(new Client({ baseUrl: server.baseUrl, apiKey: "k", secret: "the secret" }));
    const token = await backend.createUserToken("user_42", { expiresIn: 120 });
    const { payload } = await jwtVerify(token, new TextEncoder().encode("the secret"), {
      audience: "patchbay",
    });
    expect(payload.sub).toBe("user_42");
    const page = track(new Client({ baseUrl: server.baseUrl }));
    await expect(page.createUserToken("u")).rejects.toBeInstanceOf(AuthError);
  });

  it("opens the socket lazily, once, and authenticates a page with its user token", async () => {
    const client = track(new Client({ baseUrl: server.baseUrl }));
    client.setUser({ id: "u_1" }, "tok_1");
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(server.sockets).toHaveLength(0);
    expect(client.state).toBe("idle");
    const connecting = client.connect();
    const socket = await server.accept();
    await connecting;
    expect(socket.all("hello")[0]!.auth).toEqual({ kind: "user", token: "tok_1" });
    expect(client.state).toBe("open");
    await client.connect();
    expect(server.sockets).toHaveLength(1);
  });

  it("asks the token provider before dialing with an expired token, and after a refusal", async () => {
    const expired = await createUserToken("s", "u_1", { expiresIn: -60 });
    const provided: string[] = [];
    const client = track(
      new Client({
        baseUrl: server.baseUrl,
        reconnect: { initialDelayMs: 5 },
        tokenProvider: async (user) => {
          const token = `fresh_${provided.length}_${user?.id}`;
          provided.push(token);
          return token;
        },
      }),
    );
    client.setUser({ id: "u_1" }, expired);
    void client.connect().catch(() => {});
    const first = await server.nextConnection();
    expect((await first.next("hello")).auth).toEqual({ kind: "user", token: "fresh_0_u_1" });
    first.send({ type: "error", code: "unauthorized", message: "revoked" });
    const second = await server.nextConnection();
    expect((await second.next("hello")).auth).toEqual({ kind: "user", token: "fresh_1_u_1" });
    second.welcome();
    await vi.waitFor(() => expect(client.state).toBe("open"));
  });

  it("rejects what waits with the AuthError when the credentials are refused", async () => {
    const client = track(new Client({ baseUrl: server.baseUrl }));
    client.setUser({ id: "u_1" }, "bad");
    const errors: unknown[] = [];
    client.on("error", (e) => errors.push(e));
    const creating = client.agent("support").sessions.create();
    const socket = await server.nextConnection();
    await socket.next("hello");
    socket.send({ type: "error", code: "unauthorized", message: "bad signature" });
    await expect(creating).rejects.toBeInstanceOf(AuthError);
    expect(errors[0]).toBeInstanceOf(AuthError);
    expect(client.state).toBe("idle");
  });

  it("fails a page without a token at once, and a backend's HTTP calls carry key and secret", async () => {
    const page = track(new Client({ baseUrl: server.baseUrl }));
    await expect(page.agent("support").sessions.create()).rejects.toBeInstanceOf(AuthError);
    await expect(page.agent("support").sessions.list()).rejects.toBeInstanceOf(AuthError);
    const headers: unknown[] = [];
    server.onHttp = (req, res) => {
      headers.push({ key: req.headers["x-api-key"], auth: req.headers.authorization, url: req.url });
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ sessions: [] }));
    };
    const backend = track(new Client({ baseUrl: `${server.baseUrl}/`, apiKey: "k_1", secret: "s_1" }));
    await expect(backend.agent("support").sessions.list({ userId: "u_2" })).resolves.toEqual([]);
    expect(headers).toEqual([
      { key: "k_1", auth: "Bearer s_1", url: "/v1/agents/support/sessions?userId=u_2" },
    ]);
    expect(backend.agent("support")).toBe(backend.agent("support"));
    expect(backend.agent("support").tools.size).toBe(0);
  });

  it("re-authenticates an open socket when the user changes, and resumes its sessions", async () => {
    const client = track(new Client({ baseUrl: server.baseUrl, reconnect: { initialDelayMs: 5 } }));
    client.setUser({ id: "u_1" }, "tok_a");
    const creating = client.agent("support").sessions.create();
    const socket = await server.accept();
    const create = await socket.next("session.create");
    socket.send({
      type: "session.opened",
      requestId: create.requestId,
      session: { id: "s_1", agent: "support", userId: "u_1", metadata: {}, createdAt: 1, lastSeq: 0 },
    });
    await creating;
    client.setUser({ id: "u_1" }, "tok_b");
    const next = await server.nextConnection();
    expect((await next.next("hello")).auth).toEqual({ kind: "user", token: "tok_b" });
    next.welcome();
    expect(await next.next("session.resume")).toMatchObject({ sessionId: "s_1", afterSeq: 0 });
  });

  it("times out a create the server never answers, and refuses everything once closed", async () => {
    const client = track(
      // 1 s: the clock runs from create(), and a loaded machine may take a while to dial and send.
      new Client({ baseUrl: server.baseUrl, apiKey: "k", secret: "s", requestTimeoutMs: 1_000 }),
    );
    const creating = client.agent("support").sessions.create();
    creating.catch(() => undefined);
    const socket = await server.accept();
    await socket.next("session.create");
    await expect(creating).rejects.toBeInstanceOf(TimeoutError);
    const states: string[] = [];
    client.on("state", (state) => states.push(state));
    client.close();
    expect(states).toEqual(["closed"]);
    await expect(client.agent("support").sessions.create()).rejects.toBeInstanceOf(DisconnectedError);
  });
});
