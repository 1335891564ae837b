import { afterEach, describe, expect, it } from "vitest";
import { RawClient } from "./helpers/raw-client";
import { StalledReader } from "./helpers/stalled-reader";
import { scriptedAgent, startTestServer, type TestServer } from "./helpers/start-server";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const agents = {
  support: scriptedAgent([
    { match: "hello", reply: "Hi." },
    { match: "essay", reply: `${"x".repeat(8_000)} `.repeat(250) },
  ]),
};

async function user(s: TestServer, id = "u_1") {
  return RawClient.open(s.wsUrl, { kind: "user", token: await s.token(id) });
}

async function stillServes(client: RawClient) {
  client.send({ type: "ping", nonce: "alive" });
  return (await client.nextOf("pong")).nonce === "alive";
}

describe("silent peers", () => {
  it("closes a socket that never says hello, and drops one that stops answering heartbeats", async () => {
    server = await startTestServer({
      agents,
      // 250 ms: the lively peer lives in this process, and a loaded machine may stall it (and the
      // server) for longer than two short intervals.
      clientSocket: { helloTimeoutMs: 100, heartbeatIntervalMs: 250 },
    });
    const mute = await RawClient.connect(server.wsUrl);
    expect(await mute.whenClosed()).toEqual({ code: 1008, reason: "no hello within the time allowed" });

    const deaf = await RawClient.open(
      server.wsUrl,
      { kind: "user", token: await server.token("u_1") },
      { autoPong: false },
    );
    const lively = await user(server, "u_2");
    const started = Date.now();
    const closed = await deaf.whenClosed();
    // Closed with 4408 and cut at once after two intervals without a pong (or anything else).
    expect([4408, 1006]).toContain(closed.code);
    expect(deaf.frames.some((frame) => frame.type === "ping")).toBe(true);
    expect(Date.now() - started).toBeLessThan(5_000);
    // A peer that answers pings (ws does by default) stays, for more than two intervals.
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(lively.closeInfo).toBeUndefined();
    expect(await stillServes(lively)).toBe(true);
    await lively.close();
  });
});

describe("bad frames", () => {
  it("answers malformed, unknown, invalid and binary frames with an error naming what was wrong, and keeps serving", async () => {
    server = await startTestServer({ agents });
    const client = await user(server);
    const sessionId = await client.create("support");

    client.send("{not json");
    expect(await client.nextOf("error")).toMatchObject({ code: "invalid_json" });
    client.send({ type: "teleport", sessionId });
    expect(await client.nextOf("error")).toMatchObject({
      code: "unknown_frame_type",
      path: "type",
      sessionId,
    });
    client.send({ type: "message.send", sessionId, commandId: "c_1", text: 42 });
    expect(await client.nextOf("error")).toMatchObject({
      code: "invalid_frame",
      path: "text",
      commandId: "c_1",
    });
    // Over the text limit (and over 64 KiB, so not parsed again): still said for its command.
    client.send({ type: "message.send", sessionId, commandId: "c_long", text: "x".repeat(150_000) });
    expect(await client.nextOf("error")).toMatchObject({
      code: "invalid_frame",
      path: "text",
      commandId: "c_long",
      sessionId,
    });
    client.send({
      type: "session.create",
      requestId: "r_1",
      agent: "support",
      tools: [{ name: "bad name!" }],
    });
    const error = await client.nextOf("error");
    expect(error).toMatchObject({ code: "invalid_frame", requestId: "r_1" });
    expect(error.path).toMatch(/^tools\.0\./);
    client.send({ type: "session.create", requestId: "r_2", agent: "nobody" });
    expect(await client.nextOf("error")).toMatchObject({
      code: "not_found",
      requestId: "r_2",
      message: "agent nobody does not exist",
    });
    // A binary message is read as the UTF-8 text it holds.
    client.ws.send(Buffer.from([1, 2, 3]));
    expect(await client.nextOf("error")).toMatchObject({ code: "invalid_json" });
    client.ws.send(Buffer.from(JSON.stringify({ type: "ping", nonce: "bin" })), { binary: true });
    expect(await client.nextOf("pong")).toMatchObject({ nonce: "bin" });
    client.send([1, 2]);
    expect(await client.nextOf("error")).toMatchObject({ code: "invalid_frame" });
    client.send({ type: "approval.decide", sessionId, approvalId: "ap_missing", allowed: true });
    expect(await client.nextOf("error")).toMatchObject({ code: "not_found", sessionId });

    expect(await stillServes(client)).toBe(true);
    client.send({ type: "message.send", sessionId, commandId: "c_2", text: "hello" });
    expect(await client.turnEnd("c_2")).toMatchObject({ type: "response.completed", text: "Hi." });
    await client.close();
  });

  it("refuses a frame over 5 MiB with frame_too_large and closes on a far larger one (1009)", async () => {
    server = await startTestServer({ agents });
    const client = await user(server);
    const sessionId = await client.create("support");
    const over = 5 * 1024 * 1024 + 100;
    client.send({ type: "message.send", sessionId, commandId: "big", text: "x".repeat(over) });
    const error = await client.nextOf("error", 10_000);
    expect(error.code).toBe("frame_too_large");
    expect(error.message).toMatch(/over the limit of 5242880 bytes/);
    expect(error.commandId).toBe("big");
    expect(await stillServes(client)).toBe(true);

    // Up to the result limit (8 MiB) plus 1 MiB is read and refused on an open socket; beyond it
    // the frame is not read at all.
    client.send({ type: "message.send", sessionId, commandId: "large", text: "x".repeat(7 * 1024 * 1024) });
    expect((await client.nextOf("error", 10_000)).code).toBe("frame_too_large");
    expect(await stillServes(client)).toBe(true);
    client.send({ type: "message.send", sessionId, commandId: "huge", text: "x".repeat(10 * 1024 * 1024) });
    expect((await client.whenClosed()).code).toBe(1009);
  });

  it("answers a flood with rate_limited, then closes the flooding socket while another session works", async () => {
    server = await startTestServer({
      agents,
      clientSocket: { rateBurst: 20, ratePerSecond: 10, maxRateViolations: 30 },
    });
    const other = await user(server, "u_2");
    const otherSession = await other.create("support");
    const flooder = await user(server, "u_1");
    for (let i = 0; i < 200; i++) flooder.send({ type: "ping", nonce: String(i) });
    const limited = await flooder.next((f) => f.type === "error" && f.code === "rate_limited");
    expect(limited.type === "error" && limited.retryAfterMs).toBeGreaterThan(0);
    const closed = await flooder.whenClosed();
    expect(closed).toEqual({ code: 1008, reason: "rate limit exceeded" });
    expect(flooder.frames.filter((f) => f.type === "pong").length).toBeLessThanOrEqual(21);

    other.send({ type: "message.send", sessionId: otherSession, commandId: "c_1", text: "hello" });
    expect(await other.turnEnd("c_1")).toMatchObject({ type: "response.completed", text: "Hi." });
    await other.close();
  });

  it("does not charge a page's answers to the calls it was sent against the rate limit, but charges the rest", async () => {
    const calls = 8;
    server = await startTestServer({
      agents: {
        pages: scriptedAgent([
          {
            match: "go",
            toolCalls: Array.from({ length: calls }, () => ({ tool: "work", arguments: {} })),
            reply: "all answered",
          },
        ]),
      },
      // hello, session.create and message.send use the burst up; nothing refills during the test.
      clientSocket: { rateBurst: 3, ratePerSecond: 0.001, maxRateViolations: 50 },
    });
    const page = await user(server);
    const sessionId = await page.create("pages", {
      tools: [{ name: "work", description: "Works", parameters: { type: "object", properties: {} } }],
    });
    page.send({ type: "message.send", sessionId, commandId: "c_1", text: "go" });
    const result = (text: string) => ({ outcome: "completed", content: { text, images: [] } });
    // The model asks for every call in one round, so all of them are out before any answer.
    const sent = [];
    for (let i = 0; i < calls; i++) sent.push((await page.nextOf("tool.call")).call.id);
    for (const callId of sent) {
      page.send({ type: "tool.result", sessionId, callId, attempt: 1, result: result("ok") });
    }
    // A repeat of an answer already given is not asked for: it pays, and the bucket is empty.
    page.send({ type: "tool.result", sessionId, callId: sent[0], attempt: 1, result: result("again") });
    // The turn goes on while the repeat is read, so its end and the repeat's refusal may come in
    // either order.
    const isError = (f: { type: string }) => f.type === "error";
    expect(await page.turnEnd("c_1")).toMatchObject({ type: "response.completed", text: "all answered" });
    expect(await page.matching(isError, 1)).toMatchObject([{ code: "rate_limited" }]);
    page.send({ type: "ping", nonce: "unasked" });
    // Two refusals in all: the eight answers asked for paid nothing.
    const refused = await page.matching(isError, 2);
    expect(refused).toMatchObject([{ code: "rate_limited" }, { code: "rate_limited" }]);
    expect(page.frames.filter((f) => f.type === "pong")).toEqual([]);
    await page.close();
  });

  it("closes a socket that stops reading without holding up the session for others", async () => {
    server = await startTestServer({
      agents,
      clientSocket: { maxBufferedBytes: 256 * 1024, slowReaderGraceMs: 300 },
    });
    const backend = await RawClient.open(server.wsUrl, {
      kind: "api_key",
      apiKey: server.apiKey,
      secret: server.secret,
    });
    const sessionId = await backend.create("support", { userId: "u_1" });
    const slow = await StalledReader.connect(server.wsUrl);
    slow.send({ type: "hello", protocol: 1, auth: { kind: "user", token: await server.token("u_1") } });
    slow.send({ type: "session.resume", requestId: "r", sessionId, afterSeq: 0, tools: [] });
    await new Promise((resolve) => setTimeout(resolve, 100));
    slow.stopReading();
    // Loopback's kernel buffers absorb megabytes before the server's own buffer grows, and how
    // many depends on the machine's load: keep replying (2 MB each, bounded) until the server
    // gives up on the stalled reader.
    let metrics = "";
    for (let i = 0; i < 20 && !metrics.includes('code="slow_reader"'); i++) {
      backend.send({ type: "message.send", sessionId, commandId: `e_${i}`, text: "essay" });
      expect((await backend.turnEnd(`e_${i}`, 15_000)).type).toBe("response.completed");
      await new Promise((resolve) => setTimeout(resolve, 400));
      metrics = await (await fetch(`${server.url}/metrics`)).text();
    }
    expect(metrics).toMatch(/patchbay_frames_rejected_total\{code="slow_reader"\} 1/);
    // The server gave up on the stalled reader: once it reads again, it finds the end.
    await slow.drainUntilClosed();
    // The reader that kept up was never cut off.
    expect(backend.closeInfo).toBeUndefined();
    backend.send({ type: "message.send", sessionId, commandId: "c_2", text: "hello" });
    expect(await backend.turnEnd("c_2")).toMatchObject({ type: "response.completed", text: "Hi." });
    await backend.close();
  });
});
