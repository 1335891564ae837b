import { hostname } from "node:os";
import { createUserToken } from "@patchbay/server";
import { describe, expect, it } from "vitest";
import { CHAOS_AGENT_YAML } from "../fixtures/chaos-inputs";
import { type CliServer, cliWorkspaces, runCli } from "./helpers/cli-process";
import { RawClient } from "./helpers/raw-client";

// The findings of issue 15, each against a real `patchbay serve` process over loopback.

const { workspace: newWorkspace, start: startIn } = cliWorkspaces("patchbay-hardening-");

const workspace = (extraEnv: Record<string, string> = {}) =>
  newWorkspace(CHAOS_AGENT_YAML, { PATCHBAY_LOG_LEVEL: "error", ...extraEnv });

const start = (env: Record<string, string>, args: string[] = []) => startIn(["serve", ...args], env);

const user = async (cli: CliServer, secret: string, id: string) =>
  RawClient.open(cli.wsUrl, { kind: "user", token: await createUserToken(secret, id) });

function p99(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] ?? 0;
}

async function healthz(url: string): Promise<number> {
  const started = performance.now();
  const response = await fetch(`${url}/healthz`);
  await response.text();
  return performance.now() - started;
}

/** Times `count` turns of a healthy session and `count` /healthz requests, interleaved. */
async function healthyFigures(cli: CliServer, client: RawClient, sessionId: string, count: number) {
  const turns: number[] = [];
  const health: number[] = [];
  for (let i = 0; i < count; i++) {
    const commandId = `c_${Math.random().toString(36).slice(2)}`;
    const started = performance.now();
    client.send({ type: "message.send", sessionId, commandId, text: "hello" });
    const end = await client.turnEnd(commandId, 15_000);
    expect(end.type).toBe("response.completed");
    turns.push(performance.now() - started);
    health.push(await healthz(cli.url));
  }
  return { turnP99: p99(turns), healthP99: p99(health) };
}

const CHECK_TOOL = (parameters: Record<string, unknown>) => ({
  name: "check_code",
  description: "Checks a code.",
  parameters: { type: "object", ...parameters },
});

describe("hostile schemas (finding 1)", () => {
  it("checks ^(a|a)*$ in linear time, refuses hostile schemas at declaration, and a healthy session never notices", async () => {
    const { env, secret } = workspace();
    const cli = await start(env);
    const healthy = await user(cli, secret, "u_healthy");
    const healthySession = await healthy.create("support");
    const before = await healthyFigures(cli, healthy, healthySession, 15);

    const attacker = await user(cli, secret, "u_attacker");
    const session = await attacker.create("support", {
      tools: [
        CHECK_TOOL({ properties: { code: { type: "string", pattern: "^(a|a)*$" } }, required: ["code"] }),
      ],
    });
    // Each of these took the JavaScript engine seconds (doubling per character) before RE2.
    const attacks: Promise<unknown>[] = [];
    for (let i = 0; i < 5; i++) {
      const commandId = `attack_${i}`;
      attacker.send({
        type: "message.send",
        sessionId: session,
        commandId,
        text: `check ${"a".repeat(40 + i)}!`,
      });
      attacks.push(attacker.turnEnd(commandId, 15_000));
    }
    const during = await healthyFigures(cli, healthy, healthySession, 15);
    const ends = (await Promise.all(attacks)) as { type: string }[];
    expect(ends.every((end) => end.type === "response.completed")).toBe(true);
    expect(JSON.stringify(attacker.events(session))).toContain("should match pattern");

    const hostile: [string, Record<string, unknown>, string][] = [
      [
        "200k enum",
        { properties: { code: { enum: Array.from({ length: 200_000 }, (_, i) => i) } } },
        "properties.code",
      ],
      [
        "invalid regex",
        { properties: { code: { type: "string", pattern: "([a-" } } },
        "properties.code.pattern",
      ],
      ["root ref", { properties: { code: { $ref: "#" } } }, "properties.code.$ref"],
      ["ref loop", { $defs: { a: { $ref: "#/$defs/b" }, b: { $ref: "#/$defs/a" } } }, "$defs.a.$ref"],
      [
        "remote ref",
        { properties: { code: { $ref: "https://169.254.169.254/s.json" } } },
        "properties.code.$ref",
      ],
    ];
    for (const [what, parameters, path] of hostile) {
      const requestId = `r_${what.replace(/\W/g, "_")}`;
      attacker.send({ type: "session.create", requestId, agent: "support", tools: [CHECK_TOOL(parameters)] });
      const error = await attacker.next(
        (f) => f.type === "error" && "requestId" in f && f.requestId === requestId,
      );
      expect(error, what).toMatchObject({
        code: expect.stringMatching(/^invalid_tool_spec$|^frame_too_large$/),
      });
      if ((error as { code: string }).code === "invalid_tool_spec") {
        expect((error as { path?: string }).path, what).toContain(`tools.0.parameters.${path}`);
      }
    }
    const after = await healthyFigures(cli, healthy, healthySession, 5);
    console.log(
      `[hardening] healthy turn p99 ${before.turnP99.toFixed(1)} ms before, ${during.turnP99.toFixed(1)} ms during the ReDoS attack; /healthz p99 ${before.healthP99.toFixed(1)} -> ${during.healthP99.toFixed(1)} ms`,
    );
    // Before RE2 one attack held the event loop for seconds (8.6 s at 30 characters, doubling
    // with each one); the margin absorbs a shared machine, the figures above are the measure.
    expect(during.turnP99).toBeLessThan(before.turnP99 * 3 + 500);
    expect(during.healthP99).toBeLessThan(before.healthP99 * 3 + 500);
    expect(after.turnP99).toBeLessThan(before.turnP99 * 3 + 500);
    await healthy.close();
    await attacker.close();
  }, 90_000);
});

describe("one data directory, one server (finding 3)", () => {
  it("refuses a second server naming pid, host and since, and takes over after the first was killed", async () => {
    const { env } = workspace();
    const first = await start(env);
    const second = await runCli(["serve"], env);
    expect(second.code).toBe(2);
    expect(second.stderr).toContain(`pid ${first.child.pid} on ${hostname()}, since 20`);
    // The first server's turns are untouched: it still answers.
    expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
    first.child.kill("SIGKILL");
    await first.exited;
    const third = await start(env);
    expect((await fetch(`${third.url}/healthz`)).status).toBe(200);
  }, 60_000);
});

describe("quotas (finding 2) and the smaller findings (4)", () => {
  it("answers quota_exceeded naming the limit for message size, session count, conversation size and bytes per second", async () => {
    const { env, secret } = workspace({
      PATCHBAY_LIMIT_MAX_MESSAGE_BYTES: "2000",
      PATCHBAY_LIMIT_MAX_CONVERSATION_ITEMS: "4",
    });
    const cli = await start(env, [
      "--limit",
      "max-sessions-per-user=2",
      "--limit",
      "connection-bytes-per-second=20000",
    ]);
    const client = await user(cli, secret, "u_1");
    const sessionId = await client.create("support");
    const send = async (commandId: string, text: string) => {
      client.send({ type: "message.send", sessionId, commandId, text });
      return client.next(
        (f) =>
          ((f.type === "response.completed" || f.type === "response.failed") && f.commandId === commandId) ||
          (f.type === "error" && "commandId" in f && f.commandId === commandId),
        10_000,
      );
    };
    expect(await send("big", "x".repeat(2_001))).toMatchObject({ type: "error", code: "quota_exceeded" });
    expect(JSON.stringify(await send("big2", "x".repeat(2_001)))).toContain("maxMessageBytes");
    expect((await send("m1", "hello")).type).toBe("response.completed");
    expect((await send("m2", "hello")).type).toBe("response.completed");
    const full = await send("m3", "hello");
    expect(full).toMatchObject({ type: "error", code: "quota_exceeded" });
    expect(JSON.stringify(full)).toContain("maxConversationItems");

    await client.create("support");
    const requestId = "r_third";
    client.send({ type: "session.create", requestId, agent: "support" });
    const third = await client.next(
      (f) => f.type === "error" && "requestId" in f && f.requestId === requestId,
    );
    expect(third).toMatchObject({ code: "quota_exceeded" });
    expect(JSON.stringify(third)).toContain("maxSessionsPerUser");

    // 20 kB/s, bursts of 160 kB: a stream of 10 kB pings runs into the quota.
    const pad = "p".repeat(10_000);
    for (let i = 0; i < 20; i++) client.send({ type: "ping", nonce: `${i}${pad}` });
    const slowed = await client.next((f) => f.type === "error" && f.code === "quota_exceeded");
    expect(JSON.stringify(slowed)).toContain("connectionBytesPerSecond");
    await client.close();
  }, 60_000);

  it("answers 400 for a malformed URL, an error frame for invalid UTF-8 and deep JSON, and limits sockets before hello", async () => {
    const { env, secret } = workspace({ PATCHBAY_LIMIT_MAX_UNAUTHENTICATED_PER_ADDRESS: "3" });
    const cli = await start(env);
    const headers = { "x-api-key": env.PATCHBAY_API_KEY, authorization: `Bearer ${secret}` };
    const malformed = await fetch(`${cli.url}/v1/sessions/%E0%A4%A`, { headers });
    expect(malformed.status).toBe(400);
    expect(await malformed.json()).toMatchObject({ error: { code: "invalid_request", path: "url" } });

    const client = await user(cli, secret, "u_1");
    const sessionId = await client.create("support");
    client.ws.send(Buffer.from([0x7b, 0x22, 0x74, 0xff, 0xfe, 0x22, 0x7d]), { binary: false });
    expect(await client.nextOf("error")).toMatchObject({ code: "invalid_json" });
    const deep = `${'{"a":'.repeat(5_000)}1${"}".repeat(5_000)}`;
    client.send(`{"type":"session.create","requestId":"r_deep","agent":"support","metadata":${deep}}`);
    const tooDeep = await client.next(
      (f) => f.type === "error" && "requestId" in f && f.requestId === "r_deep",
    );
    expect(tooDeep).toMatchObject({ code: "invalid_frame", path: "metadata.a.a.a.a.a.a.a" });
    client.send({ type: "message.send", sessionId, commandId: "still", text: "hello" });
    expect((await client.turnEnd("still")).type).toBe("response.completed");

    // Before hello: at most 3 waiting sockets from one address, and no large frames.
    const waiting = await Promise.all([0, 1, 2].map(() => RawClient.connect(cli.wsUrl)));
    await expect(RawClient.connect(cli.wsUrl)).rejects.toThrow(/503/);
    waiting[0]!.send({ type: "ping", nonce: "x".repeat(100_000) });
    expect((await waiting[0]!.whenClosed()).code).toBe(1009);
    const again = await RawClient.connect(cli.wsUrl);
    await again.close();
    for (const socket of waiting.slice(1)) await socket.close();
    await client.close();
  }, 60_000);

  it("closes a sustained flood that stays around the rate limit", async () => {
    const { env, secret } = workspace();
    const cli = await start(env);
    const client = await user(cli, secret, "u_flood");
    // 150 frames/s, sent about every 100 ms, against 100 frames/s with bursts of 200: some pass
    // each round, which used to reset the violation count, so the socket was never closed. The
    // rate follows the clock, not the rounds, so a loaded machine's late timers do not lower it.
    let closed = false;
    void client.whenClosed().then(() => {
      closed = true;
    });
    const started = Date.now();
    let sent = 0;
    for (let round = 0; round < 200 && !closed && Date.now() - started < 20_000; round++) {
      const due = Math.floor((Date.now() - started) * 0.15) + 15;
      for (; sent < due; sent++) client.send({ type: "ping", nonce: String(sent) });
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(closed).toBe(true);
    expect(await client.whenClosed()).toMatchObject({ code: 1008, reason: "rate limit exceeded" });
  }, 30_000);
});
