import { AuthError, Client, NotFoundError } from "@patchbay/client";
import { afterEach, describe, expect, it } from "vitest";
import { backendClient, closeAllClients, userClient } from "./helpers/clients";
import { scriptedAgent, startTestServer, type TestServer } from "./helpers/start-server";

let server: TestServer | undefined;
const own: Client[] = [];

afterEach(async () => {
  closeAllClients();
  for (const client of own.splice(0)) client.close();
  await server?.close();
  server = undefined;
});

async function start(): Promise<TestServer> {
  return startTestServer({ agents: { support: scriptedAgent([{ match: "^hi", reply: "Hello!" }]) } });
}

function pageClient(
  test: TestServer,
  options: Partial<ConstructorParameters<typeof Client>[0]> = {},
): Client {
  const client = new Client({ baseUrl: test.url, requestTimeoutMs: 5_000, ...options });
  own.push(client);
  return client;
}

describe("the client's credentials against the real server", () => {
  it("rejects the caller with an AuthError for a token signed with another secret, or expired", async () => {
    server = await start();
    const forged = pageClient(server);
    const { createUserToken } = await import("@patchbay/client");
    forged.setUser({ id: "u_1" }, await createUserToken("not the secret", "u_1"));
    const error = await forged
      .agent("support")
      .sessions.create()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AuthError);
    expect(error).toMatchObject({ code: "auth" });

    const expired = pageClient(server);
    expired.setUser({ id: "u_1" }, await server.token("u_1", -10));
    await expect(expired.agent("support").sessions.list()).rejects.toBeInstanceOf(AuthError);
  });

  it("refreshes an expired token through the token provider before dialing", async () => {
    server = await start();
    const test = server;
    let minted = 0;
    const client = pageClient(test, {
      tokenProvider: async (user) => {
        minted += 1;
        return test.token(user!.id);
      },
    });
    client.setUser({ id: "u_1" }, await test.token("u_1", -10));
    const session = await client.agent("support").sessions.create();
    expect((await session.responses.create("hi")).text).toBe("Hello!");
    expect(minted).toBe(1);
    expect(session.info.userId).toBe("u_1");
  });

  it("keeps users to their own sessions: another user's id answers not_found", async () => {
    server = await start();
    const alice = await userClient(server, "alice");
    const session = await alice.agent("support").sessions.create({ metadata: { page: "a" } });
    const bob = await userClient(server, "bob");
    await expect(bob.agent("support").sessions.resume(session.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(bob.agent("support").sessions.get(session.id)).rejects.toBeInstanceOf(NotFoundError);
    await expect(bob.agent("support").sessions.delete(session.id)).rejects.toBeInstanceOf(NotFoundError);
    expect(await bob.agent("support").sessions.list()).toEqual([]);
    const mine = await alice.agent("support").sessions.list();
    expect(mine.map((s) => s.id)).toEqual([session.id]);
  });

  it("lets a backend act for any user over the socket and HTTP", async () => {
    server = await start();
    const backend = backendClient(server);
    const session = await backend
      .agent("support")
      .sessions.create({ userId: "carol", metadata: { via: "backend" } });
    expect(session.info).toMatchObject({ userId: "carol", agent: "support", metadata: { via: "backend" } });
    expect((await session.responses.create("hi there")).text).toBe("Hello!");
    const listed = await backend.agent("support").sessions.list({ userId: "carol" });
    expect(listed.map((s) => s.id)).toEqual([session.id]);
    const snapshot = await backend.agent("support").sessions.get(session.id);
    expect(snapshot.conversation.map((i) => (i.type === "message" ? i.text : i.name))).toEqual([
      "hi there",
      "Hello!",
    ]);
    // The user's own page sees the same session.
    const carol = await userClient(server, "carol");
    const resumed = await carol.agent("support").sessions.resume(session.id);
    await new Promise<void>((resolve) => {
      if (resumed.lastSeq >= resumed.info.lastSeq) resolve();
      else resumed.on("event", (event) => event.seq >= resumed.info.lastSeq && resolve());
    });
    expect(resumed.conversation).toEqual(snapshot.conversation);
    await backend.agent("support").sessions.delete(session.id);
    expect(session.closed).toBe(true);
    await expect(backend.agent("support").sessions.get(session.id)).rejects.toBeInstanceOf(NotFoundError);
  });
});
