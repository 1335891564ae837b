import { createUserToken } from "@patchbay/server";
import { afterAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { CHAOS_AGENT_YAML, mutatedFrame } from "../fixtures/chaos-inputs";
import { eventually, PAY_RULE, startDispatchHarness } from "../fixtures/dispatch-harness";
import { CLI_SECRET, type CliServer, cliWorkspaces } from "./helpers/cli-process";
import { backendClient } from "./helpers/clients";
import { RawClient } from "./helpers/raw-client";

// The chaos suite (issue 15): an outsider's attacks against a real `patchbay serve` process,
// bounded in count and time (about a minute in all), with a healthy session beside them. It
// prints its figures at the end and fails on any crash, loss, leak or blocked event loop.

const figures = {
  refused: 0,
  fuzzFrames: 0,
  crashes: 0,
  lost: 0,
  doubled: 0,
  workerKills: 0,
  serverKills: 0,
  slowReadersClosed: 0,
  idleSessions: 0,
  healthyP99Quiet: 0,
  healthyP99Attack: 0,
};

afterAll(() => {
  console.log(
    `[chaos] attempts refused ${figures.refused}, fuzzed frames ${figures.fuzzFrames}, crashes ${figures.crashes}, ` +
      `lost ${figures.lost}, doubled ${figures.doubled}, worker kills ${figures.workerKills}, server kills ${figures.serverKills}, ` +
      `slow readers closed ${figures.slowReadersClosed}, idle sessions ${figures.idleSessions}; ` +
      `healthy turn p99 ${figures.healthyP99Quiet.toFixed(1)} ms quiet vs ${figures.healthyP99Attack.toFixed(1)} ms under attack`,
  );
});

const homes = cliWorkspaces("patchbay-chaos-");

/** A `patchbay serve` home with the chaos agent; its process and files go after each test. */
function workspace() {
  return homes.workspace(CHAOS_AGENT_YAML, { PATCHBAY_LOG_LEVEL: "error" }, "chaos").env;
}

function serve(env: Record<string, string>) {
  return homes.start(["serve"], env);
}

/** Counts a crash when the server process is gone. */
function alive(cli: CliServer): boolean {
  const up = cli.child.exitCode === null && cli.child.signalCode === null;
  if (!up) {
    figures.crashes += 1;
    console.error(`[chaos] the server process is gone: ${cli.stderr().slice(-2_000)}`);
  }
  return up;
}

const user = async (url: string, id: string) =>
  RawClient.open(url, { kind: "user", token: await createUserToken(CLI_SECRET, id) });

function p99(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * 0.99))] ?? 0;
}

async function turns(client: RawClient, sessionId: string, count: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const commandId = `h_${Math.random().toString(36).slice(2)}`;
    const started = performance.now();
    client.send({ type: "message.send", sessionId, commandId, text: "hello" });
    expect((await client.turnEnd(commandId, 15_000)).type).toBe("response.completed");
    times.push(performance.now() - started);
  }
  return times;
}

/** Polls an async reading until `done` says yes, or fails after `timeoutMs`. */
async function until<T>(read: () => Promise<T>, done: (value: T) => boolean, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline)
      throw new Error(`condition not met within ${timeoutMs} ms; last value ${String(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function metric(cli: CliServer, name: string): Promise<number> {
  let text: string;
  try {
    text = await (await fetch(`${cli.url}/metrics`)).text();
  } catch (error) {
    // A reset keep-alive connection is retried by the caller; a server that is gone is a crash.
    if (!alive(cli)) throw error;
    return Number.NaN;
  }
  const line = text
    .split("\n")
    .find((l) => l.startsWith(`${name} `) || (!name.includes("{") && l.startsWith(`${name}{`)));
  return Number(line?.split(" ").at(-1) ?? Number.NaN);
}

describe("chaos", () => {
  it("refuses every auth and isolation attempt over HTTP and WebSocket", async () => {
    const cli = await serve(workspace());
    const owner = await user(cli.wsUrl, "u_owner");
    const sessionId = await owner.create("chaos");
    const attempts: Promise<boolean>[] = [];
    const forged = await createUserToken("not-the-secret", "u_owner");
    const expired = await createUserToken(CLI_SECRET, "u_owner", { expiresIn: -10 });
    for (const token of [forged, expired, "garbage", ""]) {
      attempts.push(
        (async () => {
          const socket = await RawClient.connect(cli.wsUrl);
          socket.send({ type: "hello", protocol: 1, auth: { kind: "user", token } });
          const reply = await socket.next((f) => f.type === "error" || f.type === "welcome");
          socket.drop();
          return reply.type === "error";
        })(),
        fetch(`${cli.url}/v1/sessions/${sessionId}`, { headers: { authorization: `Bearer ${token}` } }).then(
          (r) => r.status === 401,
        ),
      );
    }
    const thief = await user(cli.wsUrl, "u_thief");
    for (const frame of [
      { type: "session.resume", requestId: "r1", sessionId, afterSeq: 0 },
      { type: "message.send", sessionId, commandId: "c1", text: "hello" },
      { type: "interrupt", sessionId, commandId: "c2" },
      { type: "approval.decide", sessionId, approvalId: "a1", allowed: true },
    ]) {
      thief.send(frame);
      attempts.push(thief.next((f) => f.type === "error").then((f) => f.type === "error"));
      await attempts.at(-1);
    }
    const thiefToken = await createUserToken(CLI_SECRET, "u_thief");
    attempts.push(
      fetch(`${cli.url}/v1/sessions/${sessionId}`, {
        headers: { authorization: `Bearer ${thiefToken}` },
      }).then((r) => r.status === 404),
    );
    attempts.push(
      new Promise<boolean>((resolve) => {
        const worker = new WebSocket(cli.wsUrl.replace("/v1/client", "/v1/worker"));
        worker.on("open", () =>
          worker.send(JSON.stringify({ type: "worker.hello", protocol: 1, apiKey: "wrong" })),
        );
        worker.on("close", () => resolve(true));
        worker.on("error", () => resolve(true));
      }),
    );
    const results = await Promise.all(attempts);
    figures.refused += results.filter(Boolean).length;
    expect(results.every(Boolean)).toBe(true);
    expect(owner.events(sessionId).filter((e) => e.type === "message.created")).toHaveLength(0);
    expect(alive(cli)).toBe(true);
  }, 30_000);

  it("survives frame fuzzing, hostile schemas, ReDoS, quotas and idle sessions with a healthy session beside them", async () => {
    // 1 MiB/s per socket (bursts of 8 MiB): each attacker's twenty 1.1 MB messages go past it, so
    // the byte quota is exercised whatever the machine's speed (the default is 4 MiB/s).
    const cli = await serve({ ...workspace(), PATCHBAY_LIMIT_CONNECTION_BYTES_PER_SECOND: "1048576" });
    const healthy = await user(cli.wsUrl, "u_healthy");
    const healthySession = await healthy.create("chaos");
    await metric(cli, "nodejs_eventloop_lag_max_seconds"); // a scrape resets the maximum
    const quiet = await turns(healthy, healthySession, 20);

    const attackers = await Promise.all([1, 2, 3].map((i) => user(cli.wsUrl, `u_attacker_${i}`)));
    const sessions = await Promise.all(
      attackers.map((a) =>
        a.create("chaos", {
          tools: [
            {
              name: "check_code",
              description: "Checks.",
              parameters: { type: "object", properties: { code: { type: "string", pattern: "^(a|a)*$" } } },
            },
          ],
        }),
      ),
    );
    const idle: RawClient[] = [];
    const attack = (async () => {
      for (let round = 0; round < 20; round++) {
        for (const [k, attacker] of attackers.entries()) {
          for (let i = 0; i < 25; i++) {
            const frame = mutatedFrame(round * 100 + k * 25 + i, sessions[k]!);
            if (typeof frame === "string") attacker.send(frame);
            else attacker.ws.send(frame, { binary: (round + i) % 2 === 0 });
            figures.fuzzFrames += 1;
          }
          attacker.send({
            type: "message.send",
            sessionId: sessions[k]!,
            commandId: `redos_${round}_${k}`,
            text: `check ${"a".repeat(40 + round)}!`,
          });
          attacker.send({
            type: "tools.update",
            sessionId: sessions[k]!,
            tools: [
              {
                name: "bad",
                description: "d",
                parameters: { type: "object", properties: { a: { $ref: "#" } } },
              },
            ],
          });
          attacker.send({
            type: "message.send",
            sessionId: sessions[k]!,
            commandId: `big_${round}`,
            text: "x".repeat(1_100_000),
          });
        }
        if (round % 4 === 0) {
          const socket = await user(cli.wsUrl, `u_idle_${round}`);
          for (let s = 0; s < 10; s++) await socket.create("chaos");
          figures.idleSessions += 10;
          idle.push(socket);
        }
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    })();
    const underAttack = await turns(healthy, healthySession, 20);
    await attack;
    figures.healthyP99Quiet = p99(quiet);
    figures.healthyP99Attack = p99(underAttack);

    const refusals = attackers.flatMap((a) => a.frames.filter((f) => f.type === "error"));
    figures.refused += refusals.length;
    expect(refusals.some((f) => f.type === "error" && f.code === "invalid_tool_spec")).toBe(true);
    expect(refusals.some((f) => f.type === "error" && f.code === "quota_exceeded")).toBe(true);
    expect(attackers.every((a) => a.closeInfo === undefined || a.closeInfo.code === 1008)).toBe(true);
    // No blocked event loop: one ReDoS used to hold it for seconds (and each extra character
    // doubled that). The bound is loose because CI shares its cores; the figures are printed.
    expect(figures.healthyP99Attack).toBeLessThan(figures.healthyP99Quiet * 4 + 1_000);
    expect(await metric(cli, "nodejs_eventloop_lag_max_seconds")).toBeLessThan(1);
    expect(alive(cli)).toBe(true);

    // No leak: once everyone leaves, no socket is left counted.
    for (const socket of [...attackers, ...idle, healthy]) socket.drop();
    await until(
      () => metric(cli, "patchbay_clients_connected"),
      (n) => n === 0,
      10_000,
    );
  }, 90_000);

  it("answers a healthy socket at once while attackers' reads hold megabytes of costly frames", async () => {
    const cli = await serve(workspace());
    const healthy = await user(cli.wsUrl, "u_healthy");
    const attackers = await Promise.all([1, 2, 3].map((i) => user(cli.wsUrl, `u_deep_${i}`)));
    let pings = 0;
    const rtt = async () => {
      const nonce = `n${pings++}`;
      const started = performance.now();
      healthy.send({ type: "ping", nonce });
      await healthy.next((f) => f.type === "pong" && "nonce" in f && f.nonce === nonce, 10_000);
      return performance.now() - started;
    };
    const quiet: number[] = [];
    for (let i = 0; i < 20; i++) quiet.push(await rtt());
    // Each attacker sends 190 frames nested 3,000 deep (2.9 MB, within the rate burst and the
    // byte quotas) at once: the server reads up to 2 MB of a socket per poll, and V8 took 1.5 ms
    // to parse each such frame (twice, with the error's ids).
    const deep = `${'{"a":'.repeat(3_000)}1${"}".repeat(3_000)}`;
    for (const attacker of attackers)
      for (let i = 0; i < 190; i++)
        attacker.send(
          `{"type":"session.resume","requestId":"deep_${i}","sessionId":"s_x","afterSeq":0,"x":${deep}}`,
        );
    const refused = () =>
      attackers.flatMap((a) =>
        a.frames.filter((f) => f.type === "error" && "requestId" in f && f.requestId?.startsWith("deep_")),
      );
    const underAttack: number[] = [];
    for (let i = 0; i < 500 && refused().length < 570; i++) underAttack.push(await rtt());
    await eventually(
      () => refused().length,
      (n) => n === 570,
      15_000,
    );
    figures.refused += 570;
    expect(refused().every((f) => f.type === "error" && f.code === "invalid_frame")).toBe(true);
    const worst = Math.max(...underAttack);
    console.log(
      `[chaos] healthy ping ${Math.max(...quiet).toFixed(1)} ms at worst quiet vs ${worst.toFixed(1)} ms while 570 frames nested 3,000 deep were refused`,
    );
    // When a socket's frames were handled as they were read and such frames were parsed, the
    // healthy ping waited behind whole reads of them: half a second and more.
    expect(worst).toBeLessThan(250);
    expect(alive(cli)).toBe(true);
  }, 30_000);

  it("closes slow readers and gives their memory back", async () => {
    const cli = await serve(workspace());
    const healthy = await user(cli.wsUrl, "u_healthy");
    const sessionId = await healthy.create("chaos");
    await turns(healthy, sessionId, 3);
    const heapBefore = await metric(cli, "nodejs_heap_size_used_bytes");
    const readers: RawClient[] = [];
    for (let i = 0; i < 3; i++) {
      const reader = await user(cli.wsUrl, `u_slow_${i}`);
      // A flood in each of eight sessions: a session answers only the newest of the messages
      // waiting, and a flood's reply sends its 1 MB three times (its words, then
      // `message.completed` and `response.completed`), so eight put about 24 MB, well over the
      // socket buffers and the 8 MiB limit, behind.
      const own: string[] = [];
      for (let k = 0; k < 8; k++) own.push(await reader.create("chaos"));
      (reader.ws as unknown as { _socket: { pause(): void } })._socket.pause();
      for (const [k, sessionId] of own.entries())
        reader.send({ type: "message.send", sessionId, commandId: `e${k}`, text: "flood" });
      readers.push(reader);
    }
    // A paused reader cannot even read its close frame: the server's count says it was cut off.
    figures.slowReadersClosed += await until(
      () => metric(cli, 'patchbay_frames_rejected_total{code="slow_reader"}'),
      (n) => n >= 3,
      30_000,
    );
    expect(await turns(healthy, sessionId, 3)).toHaveLength(3);
    await until(
      () => metric(cli, "patchbay_clients_connected"),
      (n) => n === 1,
      15_000,
    );
    // Their turns go on without them; once those end, their sessions leave memory.
    await until(
      () => metric(cli, "patchbay_sessions_active"),
      (n) => n <= 1,
      60_000,
    );
    const heapAfter = await until(
      () => metric(cli, "nodejs_heap_size_used_bytes"),
      (bytes) => bytes < heapBefore + 64 * 1024 * 1024,
      15_000,
    );
    expect(heapAfter).toBeLessThan(heapBefore + 64 * 1024 * 1024);
    expect(alive(cli)).toBe(true);
    healthy.drop();
  }, 60_000);

  it("loses and doubles nothing when the server is killed mid-turn and restarted on its data", async () => {
    const env = workspace();
    let cli = await serve(env);
    let client = await user(cli.wsUrl, "u_1");
    const sessionId = await client.create("chaos");
    const acknowledged: string[] = [];
    for (let kill = 0; kill < 3; kill++) {
      for (let i = 0; i < 4; i++) {
        const commandId = `k${kill}_${i}`;
        client.send({ type: "message.send", sessionId, commandId, text: i === 3 ? "essay" : "hello" });
        await client.next((f) => f.type === "message.created" && f.commandId === commandId);
        acknowledged.push(commandId);
      }
      cli.child.kill("SIGKILL");
      await cli.exited;
      figures.serverKills += 1;
      cli = await serve(env);
      client = await user(cli.wsUrl, "u_1");
      client.send({ type: "session.resume", requestId: `r${kill}`, sessionId, afterSeq: 0 });
      await client.next((f) => f.type === "session.opened");
    }
    await eventually(
      () => client.events(sessionId).filter((e) => e.type === "message.created").length,
      (n) => n >= acknowledged.length,
      10_000,
    );
    const created = client
      .events(sessionId)
      .flatMap((e) => (e.type === "message.created" ? [e.commandId] : []));
    figures.lost += acknowledged.filter((id) => !created.includes(id)).length;
    figures.doubled += created.length - new Set(created).size;
    expect(figures.lost).toBe(0);
    expect(figures.doubled).toBe(0);
    // Every acknowledged message sent again (a client that never saw its answer) is a duplicate
    // after the kills: no second message and no second turn, then a new one is answered.
    for (const commandId of acknowledged) {
      client.send({ type: "message.send", sessionId, commandId, text: "hello" });
    }
    client.send({ type: "message.send", sessionId, commandId: "after", text: "hello" });
    expect((await client.turnEnd("after", 15_000)).type).toBe("response.completed");
    const log = client.events(sessionId);
    for (const type of ["message.created", "response.started"] as const) {
      const ids = log.flatMap((e) => (e.type === type ? [e.commandId] : []));
      expect(ids.filter((id) => id !== "after").sort()).toEqual(
        [...new Set(ids.filter((id) => id !== "after"))].sort(),
      );
      expect(ids.filter((id) => id === "after")).toEqual(["after"]);
    }
    client.drop();
  }, 60_000);

  it("runs each hosted call's side effect once when its worker is SIGKILLed mid-call", async () => {
    const harness = await startDispatchHarness({
      support: {
        model: {
          provider: "scripted",
          rules: [PAY_RULE],
        },
      },
    });
    const client = backendClient(harness, 10_000);
    try {
      for (let round = 0; round < 3; round++) {
        const id = `w_victim_${round}`;
        const victim = await harness.worker({ id, capacity: 4, hostTools: true, toolDelayMs: 1_000 });
        const session = await client.agent("support").sessions.create({ userId: `u_${round}` });
        const reply = session.responses.create(`pay ${round + 1}`);
        await victim.waitFor("effect", () => true, 10_000);
        await victim.kill("SIGKILL");
        figures.workerKills += 1;
        // The same worker comes back and is given the call it never answered.
        const back = await harness.worker({ id, capacity: 4, hostTools: true, toolDelayMs: 100 });
        expect((await reply).text).toMatch(/^Done: /);
        await back.kill("SIGKILL");
      }
      // Each call ran twice (before and after the kill) and its side effect happened once.
      const calls = harness.db
        .prepare(
          "SELECT d.call_id AS id, COUNT(*) AS runs, (SELECT COUNT(*) FROM effects e WHERE e.call_id = d.call_id) AS effects FROM deliveries d GROUP BY d.call_id",
        )
        .all() as { id: string; runs: number; effects: number }[];
      expect(calls).toHaveLength(3);
      expect(calls.every((call) => call.runs >= 2)).toBe(true);
      figures.doubled += calls.filter((call) => call.effects > 1).length;
      figures.lost += calls.filter((call) => call.effects === 0).length;
      expect(calls.every((call) => call.effects === 1)).toBe(true);
    } finally {
      client.close();
      await harness.close();
    }
  }, 60_000);
});
