import { decodeFrame, PROTOCOL_VERSION } from "@patchbay/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { RawClient } from "./helpers/raw-client";
import { scriptedAgent, startTestServer, type TestServer } from "./helpers/start-server";

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** mulberry32: small, seeded, good enough to make the same frames on every run. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FRAME_COUNT = 1_500;

function fuzzer(random: () => number, sessionId: string, foreignSessionId: string) {
  const int = (n: number) => Math.floor(random() * n);
  const pick = <T>(items: readonly T[]): T => items[int(items.length)]!;
  const text = () => {
    const length = pick([0, 1, 5, 64, 300, 5_000]);
    let out = "";
    for (let i = 0; i < length; i++)
      out += String.fromCharCode(pick([32 + int(95), int(0xd800), 0xfffd, 0, 10]));
    return out;
  };
  const value = (depth = 0): unknown => {
    switch (int(depth > 3 ? 5 : 8)) {
      case 0:
        return null;
      case 1:
        return random() < 0.5;
      case 2:
        return pick([0, -1, 1.5, 2 ** 53, Number.MAX_SAFE_INTEGER, -0]);
      case 3:
      case 4:
        return text();
      case 5:
        return Array.from({ length: int(4) }, () => value(depth + 1));
      default:
        return Object.fromEntries(
          Array.from({ length: int(4) }, () => [text().slice(0, 8), value(depth + 1)]),
        );
    }
  };
  const result = { outcome: "completed", content: { text: "ok", images: [] } };
  const templates = (): Record<string, unknown>[] => [
    { type: "hello", protocol: PROTOCOL_VERSION, auth: { kind: "user", token: "x" } },
    { type: "session.create", requestId: "r", agent: "support", tools: [] },
    { type: "session.resume", requestId: "r", sessionId, afterSeq: int(5), tools: [] },
    { type: "session.close", sessionId: foreignSessionId },
    { type: "message.send", sessionId, commandId: `c${int(50)}`, text: "hello" },
    { type: "interrupt", sessionId, commandId: `i${int(50)}` },
    {
      type: "tools.update",
      sessionId,
      tools: [{ name: "t", description: "d", parameters: { type: "object" } }],
    },
    { type: "tool.progress", sessionId, callId: "call_x", text: "p" },
    { type: "tool.say", sessionId, callId: "call_x", text: "s" },
    { type: "tool.hold", sessionId, callId: "call_x" },
    { type: "tool.result", sessionId, callId: "call_x", attempt: 1, result },
    { type: "approval.decide", sessionId, approvalId: "ap_x", allowed: true },
    { type: "ping", nonce: "n" },
  ];
  const mutate = (frame: Record<string, unknown>) => {
    const keys = Object.keys(frame);
    for (let m = 0, n = 1 + int(3); m < n; m++) {
      const key = pick(keys);
      switch (int(7)) {
        case 0:
          delete frame[key];
          break;
        case 1:
          frame[key] = value();
          break;
        case 2:
          frame.type = pick(["ping", "hello", "message.send", text(), "__proto__", "constructor"]);
          break;
        case 3:
          frame.sessionId = pick([foreignSessionId, sessionId, "", text()]);
          break;
        case 4:
          frame[text().slice(0, 12)] = value();
          break;
        case 5: {
          let nested: unknown = "deep";
          for (let d = 0; d < 40; d++) nested = { d: nested };
          frame[key] = nested;
          break;
        }
        default:
          break;
      }
    }
    return frame;
  };
  return (): string | Buffer => {
    const kind = random();
    if (kind < 0.1) return Buffer.from(Array.from({ length: int(64) }, () => int(256)));
    if (kind < 0.2) return text();
    if (kind < 0.3) return JSON.stringify(value());
    if (kind < 0.4) return JSON.stringify(pick(templates()));
    const frame = JSON.stringify(mutate(pick(templates())));
    // Truncated and spliced JSON now and then.
    if (random() < 0.1) return frame.slice(0, int(frame.length));
    return frame;
  };
}

describe("fuzz", () => {
  it("survives random and mutated frames, answers only valid frames, and a normal session still works", async () => {
    server = await startTestServer({
      agents: { support: scriptedAgent([{ match: "hello", reply: "Hi." }]) },
      clientSocket: { rateBurst: 100_000, ratePerSecond: 100_000 },
    });
    const victim = await RawClient.open(server.wsUrl, { kind: "user", token: await server.token("victim") });
    const victimSession = await victim.create("support");
    victim.send({ type: "message.send", sessionId: victimSession, commandId: "v_1", text: "hello" });
    await victim.turnEnd("v_1");
    const victimEvents = victim.events(victimSession).length;

    const attacker = await RawClient.open(server.wsUrl, {
      kind: "user",
      token: await server.token("attacker"),
    });
    const ownSession = await attacker.create("support");
    const next = fuzzer(prng(0x5eed), ownSession, victimSession);
    for (let i = 0; i < FRAME_COUNT; i++) {
      const frame = next();
      if (typeof frame === "string") attacker.ws.send(frame);
      else attacker.ws.send(frame, { binary: true });
      if (i % 100 === 99) await new Promise((resolve) => setTimeout(resolve, 5));
    }
    attacker.send({ type: "ping", nonce: "end" });
    await attacker.next((f) => f.type === "pong" && f.nonce === "end", 15_000);

    // The attacker is still connected, and everything the server said was a valid frame.
    expect(attacker.closeInfo).toBeUndefined();
    for (const frame of attacker.frames) {
      const decoded = decodeFrame(JSON.stringify(frame), { channel: "server-to-client" });
      expect(decoded.ok, JSON.stringify(frame).slice(0, 200)).toBe(true);
    }
    expect(attacker.frames.filter((f) => f.type === "error").length).toBeGreaterThan(FRAME_COUNT / 2);

    // The victim's session saw nothing, and works.
    expect(victim.events(victimSession).length).toBe(victimEvents);
    victim.send({ type: "message.send", sessionId: victimSession, commandId: "v_2", text: "hello" });
    expect(await victim.turnEnd("v_2")).toMatchObject({ type: "response.completed", text: "Hi." });

    // A brand-new client can do a whole normal session.
    const fresh = await RawClient.open(server.wsUrl, { kind: "user", token: await server.token("fresh") });
    const freshSession = await fresh.create("support");
    fresh.send({ type: "message.send", sessionId: freshSession, commandId: "f_1", text: "hello" });
    expect(await fresh.turnEnd("f_1")).toMatchObject({ type: "response.completed", text: "Hi." });
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    await Promise.all([victim.close(), attacker.close(), fresh.close()]);
  });
});
