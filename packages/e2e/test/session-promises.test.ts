// Issue #22's broken promises on the client side: what `resume`, `decide` and a deletion over
// HTTP tell the page, against a real server on loopback.
import { Client, Tools } from "@patchbay/client";
import { afterEach, describe, expect, it } from "vitest";
import { backendClient, closeAllClients, nextEvent, userClient } from "./helpers/clients";
import { scriptedAgent, startTestServer, type TestServer } from "./helpers/start-server";

let server: TestServer | undefined;
afterEach(async () => {
  closeAllClients();
  await server?.close();
  server = undefined;
});

function bookingTools(runs: string[], expiresInMs?: number): Tools {
  return new Tools().register({
    name: "book_flight",
    description: "Book the flight the user picked",
    parameters: { type: "object", properties: { flight_id: { type: "string" } }, required: ["flight_id"] },
    approval: { title: "Book flight {flight_id}?", ...(expiresInMs === undefined ? {} : { expiresInMs }) },
    run: ({ flight_id }: { flight_id: string }) => {
      runs.push(flight_id);
      return `Booked ${flight_id}.`;
    },
  });
}

function start(): Promise<TestServer> {
  return startTestServer({
    agents: {
      travel: scriptedAgent([
        {
          match: "book both",
          toolCalls: [
            { tool: "book_flight", arguments: { flight_id: "LH400" } },
            { tool: "book_flight", arguments: { flight_id: "LH401" } },
          ],
          reply: "Done.",
        },
        {
          match: "book (?<flight>[A-Z]{2}\\d+)",
          toolCalls: [{ tool: "book_flight", arguments: { flight_id: "{flight}" } }],
          reply: "Done: {result}",
          errorReply: "Not booked: {result}",
        },
        { match: "hello", reply: "Hello there, how can I help you today?" },
      ]),
    },
  });
}

describe("sessions.resume (docs/guides/approval.md)", () => {
  it("resolves once the replay caught up: 20 earlier turns and the pending approval are there", async () => {
    server = await start();
    const first = await userClient(server, "u_1");
    const runs: string[] = [];
    const opened = await first.agent("travel").sessions.create({ tools: bookingTools(runs) });
    for (let i = 0; i < 20; i++) await opened.responses.create(`hello ${i}`);
    const asked = nextEvent(opened, "approval");
    void opened.responses.create("book LH400").catch(() => {});
    const [request] = await asked;
    first.close();

    // A reload: a new client resumes the saved id and reads the approvals right away.
    const second = await userClient(server, "u_1");
    const session = await second.agent("travel").sessions.resume(opened.id, { tools: bookingTools(runs) });
    expect(session.approvals.map((a) => a.id)).toEqual([request.id]);
    expect(session.conversation.filter((item) => item.type === "message")).toHaveLength(41);
    expect(await session.decide(request.id, { allowed: true })).toBe("allowed");
    await nextEvent(session, "responseCompleted");
    expect(runs).toEqual(["LH400"]);
  });
});

describe('session.on("approvals")', () => {
  it("hands over the whole pending list each time it changes", async () => {
    server = await start();
    const client = await userClient(server, "u_1");
    const runs: string[] = [];
    const session = await client.agent("travel").sessions.create({ tools: bookingTools(runs) });
    const seen: string[][] = [];
    session.on("approvals", (pending) => seen.push(pending.map((a) => a.title)));
    const asked = nextEvent(session, "approvals", (pending) => pending.length === 2);
    const reply = session.responses.create("book both");
    const [pending] = await asked;
    for (const request of pending) await session.decide(request.id, { allowed: true });
    await reply;
    expect(seen).toEqual([
      ["Book flight LH400?"],
      ["Book flight LH400?", "Book flight LH401?"],
      ["Book flight LH401?"],
      [],
    ]);
    expect(runs).toEqual(["LH400", "LH401"]);
  });
});

describe("session.decide (docs/guides/approval.md)", () => {
  it("resolves 'expired' for an answer that came after the approval expired", async () => {
    server = await start();
    const client = await userClient(server, "u_1");
    const runs: string[] = [];
    const session = await client.agent("travel").sessions.create({ tools: bookingTools(runs, 150) });
    const asked = nextEvent(session, "approval");
    const resolved = nextEvent(session, "approvalResolved");
    await session.responses.create("book LH402");
    const [request] = await asked;
    expect((await resolved)[0].outcome).toBe("expired");
    expect(await session.decide(request.id, { allowed: true })).toBe("expired");
    expect(runs).toEqual([]);
  });
});

describe("deleting a session over HTTP", () => {
  it("marks the session closed for a client attached elsewhere", async () => {
    server = await start();
    const page = await userClient(server, "u_1");
    const session = await page.agent("travel").sessions.create();
    await session.responses.create("hello");
    const closed = nextEvent(session, "closed");
    const backend: Client = backendClient(server);
    await backend.agent("travel").sessions.delete(session.id);
    const [reason] = await closed;
    expect(reason?.code).toBe("not_found");
    expect(session.closed).toBe(true);
    await expect(session.responses.create("hello again")).rejects.toThrow(/closed/);
  });
});

describe("approvals over HTTP (sessions.approvals / sessions.decide)", () => {
  it("lets a backend list a session's pending approvals and answer one without attaching", async () => {
    server = await start();
    const page = await userClient(server, "u_1");
    const runs: string[] = [];
    const session = await page.agent("travel").sessions.create({ tools: bookingTools(runs) });
    const asked = nextEvent(session, "approval");
    const reply = session.responses.create("book LH400");
    const [request] = await asked;
    const backend = backendClient(server).agent("travel").sessions;
    expect((await backend.approvals(session.id)).map((a) => a.id)).toEqual([request.id]);
    expect(await backend.decide(session.id, request.id, { allowed: true })).toBe("allowed");
    expect((await reply).text).toBe("Done: Booked LH400.");
    expect(runs).toEqual(["LH400"]);
    expect(await backend.approvals(session.id)).toEqual([]);
    // Answered again: how it ended. Unknown id: not_found. Another user's session: not_found.
    expect(await backend.decide(session.id, request.id, { allowed: false })).toBe("allowed");
    await expect(backend.decide(session.id, "approval_nope", { allowed: true })).rejects.toMatchObject({
      code: "not_found",
    });
    const stranger = await userClient(server, "u_2");
    await expect(stranger.agent("travel").sessions.approvals(session.id)).rejects.toMatchObject({
      code: "not_found",
    });
    const res = await fetch(`${server.url}/v1/sessions/${session.id}/approvals/${request.id}`, {
      method: "POST",
      headers: server.backendHeaders(),
      body: JSON.stringify({ allowed: "yes" }),
    });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { path?: string } }).error.path).toBe("allowed");
  });
});

describe("a decline with a reason (session.decide and over HTTP)", () => {
  it("tells the model the user's reason", async () => {
    server = await start();
    const client = await userClient(server, "u_1");
    const runs: string[] = [];
    const session = await client.agent("travel").sessions.create({ tools: bookingTools(runs) });
    let asked = nextEvent(session, "approval");
    let reply = session.responses.create("book LH400");
    let [request] = await asked;
    expect(await session.decide(request.id, { allowed: false, reason: "I booked it myself" })).toBe(
      "declined",
    );
    expect((await reply).text).toBe(
      'Not booked: The user declined the call of "book_flight"; it did not run. Their reason: I booked it myself',
    );
    asked = nextEvent(session, "approval");
    reply = session.responses.create("book LH401");
    [request] = await asked;
    const backend = backendClient(server).agent("travel").sessions;
    expect(await backend.decide(session.id, request.id, { allowed: false, reason: "too expensive" })).toBe(
      "declined",
    );
    expect((await reply).text).toMatch(/it did not run\. Their reason: too expensive$/);
    expect(runs).toEqual([]);
  });

  it("settles a decline whose reason is over 1,000 characters: the reason is cut to 1,000", async () => {
    server = await start();
    const client = await userClient(server, "u_1");
    const runs: string[] = [];
    const session = await client.agent("travel").sessions.create({ tools: bookingTools(runs) });
    const asked = nextEvent(session, "approval");
    const reply = session.responses.create("book LH400");
    const [request] = await asked;
    // The server refuses an approval.decide with a longer reason, and nothing ties that refusal
    // to the decide: the promise used to wait until the approval's expiry plus the request timeout.
    const long = `${"a".repeat(1_000)}${"b".repeat(500)}`;
    expect(await session.decide(request.id, { allowed: false, reason: long })).toBe("declined");
    expect((await reply).text).toBe(
      `Not booked: The user declined the call of "book_flight"; it did not run. Their reason: ${"a".repeat(1_000)}`,
    );
    expect(runs).toEqual([]);
  });
});

describe("a client with a baseUrl that is not an http(s) URL", () => {
  it("fails its first request at once, naming the address, instead of after the request timeout", async () => {
    for (const baseUrl of ["127.0.0.1:8787", "ftp://127.0.0.1:8787"]) {
      const client = new Client({ baseUrl, apiKey: "k", secret: "the secret" });
      const started = Date.now();
      const error = await client
        .agent("travel")
        .sessions.create()
        .catch((e: unknown) => e);
      client.close();
      expect(error).toMatchObject({ code: "disconnected" });
      expect((error as Error).message).toContain(`cannot open ${baseUrl}/v1/client`);
      expect(Date.now() - started).toBeLessThan(5_000);
    }
  });
});
