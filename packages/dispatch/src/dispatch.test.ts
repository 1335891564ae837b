// Over 400 lines: the behaviour of one Dispatch against a scripted server (options, work,
// connection, stop), each group sharing the same server fixture.
import type { InboundMessage } from "@patchbay/protocol";
import { Tools } from "@patchbay/tools";
import { afterEach, describe, expect, it } from "vitest";
import { Dispatch } from "./dispatch";
import { DispatchError } from "./dispatch-error";
import type { DispatchOptions } from "./dispatch-options";
import {
  type ScriptedServer,
  type ScriptedSocket,
  startScriptedServer,
} from "./test-support/scripted-server";

const servers: ScriptedServer[] = [];
const workers: Dispatch[] = [];

afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.stop({ timeoutMs: 0 }).catch(() => undefined)));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

async function server(options: Parameters<typeof startScriptedServer>[0] = {}): Promise<ScriptedServer> {
  const s = await startScriptedServer(options);
  servers.push(s);
  return s;
}

function worker(url: string, options: Partial<DispatchOptions> = {}): Dispatch {
  const d = new Dispatch({
    capacity: 2,
    url,
    apiKey: "pk_test",
    secret: "sk_test",
    backoff: { initialDelayMs: 20, maxDelayMs: 100 },
    env: {},
    ...options,
  });
  workers.push(d);
  return d;
}

function message(id: string, extra: Partial<InboundMessage> = {}): InboundMessage {
  return {
    id,
    agent: "support",
    sessionId: "s_1",
    channel: null,
    user: { id: "u_1" },
    text: `text of ${id}`,
    createdAt: 1,
    metadata: {},
    ...extra,
  };
}

function offer(
  socket: ScriptedSocket,
  workId: string,
  m: InboundMessage = message(`m_${workId}`),
  attempt = 1,
) {
  socket.send({ type: "work.offered", workId, attempt, work: { kind: "message", message: m } });
}

/** A promise the test resolves by hand, to hold a handler in the middle of its work. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return error instanceof DispatchError ? error.code : `not a DispatchError: ${String(error)}`;
  }
  return undefined;
}

describe("Dispatch options", () => {
  it("refuses a capacity that is not a positive integer, naming the field", () => {
    for (const capacity of [0, -1, 1.5, Number.NaN]) {
      expect(() => new Dispatch({ capacity, url: "http://x", apiKey: "k", secret: "s", env: {} })).toThrow(
        expect.objectContaining({ code: "invalid_capacity", path: "capacity" }),
      );
    }
  });

  it("needs a URL, a key and a secret, from options or the environment", () => {
    expect(codeOf(() => new Dispatch({ capacity: 1, apiKey: "k", secret: "s", env: {} }))).toBe(
      "invalid_options",
    );
    expect(codeOf(() => new Dispatch({ capacity: 1, url: "http://x", secret: "s", env: {} }))).toBe(
      "missing_credentials",
    );
    expect(codeOf(() => new Dispatch({ capacity: 1, url: "http://x", apiKey: "k", env: {} }))).toBe(
      "missing_credentials",
    );
    const env = { PATCHBAY_URL: "http://127.0.0.1:1", PATCHBAY_API_KEY: "k", PATCHBAY_API_SECRET: "s" };
    expect(codeOf(() => new Dispatch({ capacity: 1, env }))).toBeUndefined();
  });

  it("takes the server URL and credentials from the environment", async () => {
    const s = await server();
    const d = new Dispatch({
      capacity: 3,
      env: { PATCHBAY_URL: s.url, PATCHBAY_API_KEY: "pk_env", PATCHBAY_API_SECRET: "sk_env" },
    });
    workers.push(d);
    d.onMessage(() => undefined);
    void d.run();
    const socket = await s.nextSocket();
    expect(socket.hello).toMatchObject({ apiKey: "pk_env", secret: "sk_env", capacity: 3 });
  });

  it("needs no capacity to host tools, but does for messages and calls", async () => {
    const s = await server();
    const env = { PATCHBAY_URL: s.url, PATCHBAY_API_KEY: "pk", PATCHBAY_API_SECRET: "sk" };
    const handler = new Dispatch({ env }).onMessage(() => undefined);
    await expect(handler.run()).rejects.toMatchObject({
      code: "invalid_capacity",
      path: "capacity",
      message: expect.stringMatching(/^capacity: a worker with onMessage or onCall needs one/),
    });
    const tools = new Tools().register({ name: "t", description: "T", run: () => "ok" });
    const host = new Dispatch({ env }).host({ name: "support", tools });
    workers.push(host);
    void host.run();
    const socket = await s.nextSocket();
    expect(socket.hello).toMatchObject({ capacity: 0, handles: { messages: false, calls: false } });
    expect(socket.hello.hosts.map((h: { agent: string }) => h.agent)).toEqual(["support"]);
  });

  it("runs with a hosted registry that has no tools yet, and offers the first one registered", async () => {
    const s = await server();
    const env = { PATCHBAY_URL: s.url, PATCHBAY_API_KEY: "pk", PATCHBAY_API_SECRET: "sk" };
    const tools = new Tools();
    const host = new Dispatch({ env }).host({ name: "support", tools });
    workers.push(host);
    void host.run();
    const socket = await s.nextSocket();
    expect(socket.hello.hosts).toEqual([{ agent: "support", tools: [] }]);
    tools.register({ name: "lookup_order", description: "Look up", run: () => "found" });
    const hosts = await socket.next("worker.hosts");
    expect(hosts.hosts[0]?.tools.map((t: { name: string }) => t.name)).toEqual(["lookup_order"]);
  });

  it("refuses run() with nothing to do, and setup after run()", async () => {
    const s = await server();
    const idle = worker(s.url);
    await expect(idle.run()).rejects.toMatchObject({ code: "nothing_to_run" });

    const d = worker(s.url).onMessage(() => undefined);
    void d.run();
    await expect(d.run()).rejects.toMatchObject({ code: "already_running" });
    expect(codeOf(() => d.onCall(() => undefined))).toBe("already_running");
    expect(codeOf(() => d.host({ name: "support", tools: new Tools() }))).toBe("already_running");
    await d.stop({ timeoutMs: 0 });
    await expect(d.run()).rejects.toMatchObject({ code: "stopped" });
  });
});

describe("Dispatch work", () => {
  it("says hello with its capacity and what it handles, then reports load", async () => {
    const s = await server();
    const d = worker(s.url, { capacity: 5, workerId: "w_fixed" }).onCall(() => undefined);
    void d.run();
    const socket = await s.nextSocket();
    expect(socket.hello).toMatchObject({
      type: "worker.hello",
      protocol: 1,
      workerId: "w_fixed",
      capacity: 5,
      handles: { messages: false, calls: true },
      hosts: [],
      running: { work: [], calls: [] },
    });
    expect(await socket.next("load")).toEqual({ type: "load", active: 0, capacity: 5 });
    expect(d.state).toBe("ready");
  });

  it("accepts offered work, runs the handler, and reports it done", async () => {
    const s = await server();
    const seen: Array<{ text: string; workId: string; attempt: number }> = [];
    const d = worker(s.url).onMessage((m, ctx) => {
      seen.push({ text: m.text, workId: ctx.workId, attempt: ctx.attempt });
    });
    void d.run();
    const socket = await s.nextSocket();
    offer(socket, "wk_1", message("m_1"), 2);
    await socket.next("work.done", (f) => f.workId === "wk_1");
    expect(seen).toEqual([{ text: "text of m_1", workId: "wk_1", attempt: 2 }]);
    const types = socket.types().filter((t) => t !== "load" && t !== "ping");
    expect(types).toEqual(["work.accepted", "work.done"]);
    expect(
      socket.frames.filter((f) => f.type === "load").map((f) => (f as { active: number }).active),
    ).toEqual([0, 1, 0]);
    expect(socket.invalid).toEqual([]);
  });

  it("reports a handler's error with its code", async () => {
    const s = await server();
    const d = worker(s.url).onMessage(() => {
      throw Object.assign(new Error("crm is down"), { code: "crm_down" });
    });
    void d.run();
    const socket = await s.nextSocket();
    offer(socket, "wk_1");
    expect(await socket.next("work.done")).toEqual({
      type: "work.done",
      workId: "wk_1",
      error: { code: "crm_down", message: "crm is down" },
    });
  });

  it("never runs more than its capacity at once and hands back what does not fit", async () => {
    const s = await server();
    const g = gate();
    let running = 0;
    let peak = 0;
    const d = worker(s.url, { capacity: 2 }).onMessage(async () => {
      running++;
      peak = Math.max(peak, running);
      await g.opened;
      running--;
    });
    void d.run();
    const socket = await s.nextSocket();
    for (const id of ["wk_1", "wk_2", "wk_3"]) offer(socket, id);
    const refused = await socket.next("work.done", (f) => f.workId === "wk_3");
    expect(refused.error?.code).toBe("at_capacity");
    expect(d.active).toBe(2);
    g.open();
    await socket.next("work.done", (f) => f.workId === "wk_2");
    expect(peak).toBe(2);
  });

  it("does not run the same work twice when it is offered again", async () => {
    const s = await server();
    const g = gate();
    let runs = 0;
    const d = worker(s.url).onMessage(async () => {
      runs++;
      await g.opened;
    });
    void d.run();
    const socket = await s.nextSocket();
    offer(socket, "wk_1");
    await socket.next("work.accepted");
    offer(socket, "wk_1", undefined, 2);
    await expect.poll(() => socket.frames.filter((f) => f.type === "work.accepted").length).toBe(2);
    g.open();
    await socket.next("work.done");
    offer(socket, "wk_1", undefined, 3);
    await expect.poll(() => socket.frames.filter((f) => f.type === "work.done").length).toBe(2);
    expect(runs).toBe(1);
  });

  it("lets the model answer a session's message, and refuses a channel message", async () => {
    const s = await server();
    const d = worker(s.url).onMessage(async (m) => {
      if (m.sessionId) await d.answer(m);
    });
    void d.run();
    const socket = await s.nextSocket();
    offer(socket, "wk_1", message("m_1", { sessionId: "s_9" }));
    expect(await socket.next("answer")).toEqual({
      type: "answer",
      workId: "wk_1",
      sessionId: "s_9",
      messageId: "m_1",
    });
    await expect(
      d.answer(message("m_2", { sessionId: null, channel: { type: "sms", id: "+1" } })),
    ).rejects.toMatchObject({ code: "no_session" });
  });

  it("routes calls to onCall and refuses a kind it has no handler for", async () => {
    const s = await server();
    const calls: string[] = [];
    const d = worker(s.url).onCall((call) => {
      calls.push(`${call.from}->${call.to}`);
    });
    void d.run();
    const socket = await s.nextSocket();
    socket.send({
      type: "work.offered",
      workId: "wk_c",
      attempt: 1,
      work: {
        kind: "call",
        call: {
          id: "pc_1",
          agent: "support",
          from: "+15550100",
          to: "+15550199",
          customData: {},
          createdAt: 1,
        },
      },
    });
    await socket.next("work.done", (f) => f.workId === "wk_c");
    offer(socket, "wk_m");
    const refused = await socket.next("work.done", (f) => f.workId === "wk_m");
    expect(calls).toEqual(["+15550100->+15550199"]);
    expect(refused.error?.code).toBe("no_handler");
  });
});

describe("Dispatch connection", () => {
  it("reconnects after a drop, says what it still runs, and delivers what finished meanwhile", async () => {
    const s = await server();
    const g = gate();
    const d = worker(s.url).onMessage(() => g.opened);
    const reconnecting: number[] = [];
    d.on("reconnecting", ({ attempt }) => reconnecting.push(attempt));
    void d.run();
    const first = await s.nextSocket();
    offer(first, "wk_1");
    await first.next("work.accepted");
    first.drop();
    const second = await s.nextSocket();
    expect(second.hello.running).toEqual({ work: ["wk_1"], calls: [] });
    expect(second.hello.workerId).toBe(first.hello.workerId);
    expect(reconnecting[0]).toBe(1);
    g.open();
    expect(await second.next("work.done")).toEqual({ type: "work.done", workId: "wk_1" });
  });

  it("sends work.done again after a reconnect when it finished on a socket that died", async () => {
    const s = await server();
    const d = worker(s.url).onMessage(() => undefined);
    void d.run();
    const first = await s.nextSocket();
    offer(first, "wk_1");
    await first.next("work.done");
    first.drop();
    const second = await s.nextSocket();
    expect(await second.next("work.done")).toEqual({ type: "work.done", workId: "wk_1" });
  });

  it("drops a server that stops answering heartbeats and connects again", async () => {
    const s = await server({ heartbeatIntervalMs: 50, answerPings: false });
    const d = worker(s.url).onMessage(() => undefined);
    const disconnected: number[] = [];
    d.on("disconnected", ({ code }) => disconnected.push(code));
    void d.run();
    const first = await s.nextSocket();
    await first.next("ping");
    const second = await s.nextSocket(2_000);
    expect(second).not.toBe(first);
    expect(disconnected.length).toBeGreaterThanOrEqual(1);
  });

  it("comes back to a server that restarted on the same port", async () => {
    const s = await server();
    const d = worker(s.url).onMessage(() => undefined);
    const ready: boolean[] = [];
    d.on("ready", ({ reconnected }) => ready.push(reconnected));
    void d.run();
    await s.nextSocket();
    const port = s.port;
    await s.close();
    servers.splice(servers.indexOf(s), 1);
    expect(d.state === "reconnecting" || d.state === "connecting").toBe(true);
    const again = await startScriptedServer({}, port);
    servers.push(again);
    const socket = await again.nextSocket(3_000);
    offer(socket, "wk_after");
    await socket.next("work.done");
    expect(ready).toEqual([false, true]);
  });

  it("gives up with a typed error when the server refuses the key", async () => {
    const s = await server({ onHello: { refuse: "unauthorized" } });
    const d = worker(s.url).onMessage(() => undefined);
    const run = d.run();
    await expect(run).rejects.toMatchObject({ code: "unauthorized" });
    await new Promise((r) => setTimeout(r, 150));
    expect(s.sockets.length).toBe(1);
  });

  it("retries a server that accepts the socket but never answers hello", async () => {
    const s = await server({ onHello: "silent" });
    const d = worker(s.url, { connectTimeoutMs: 100 }).onMessage(() => undefined);
    void d.run();
    await s.nextSocket();
    s.setOptions({});
    await s.nextSocket(3_000);
    await expect.poll(() => d.state).toBe("ready");
  });
});

describe("Dispatch.stop", () => {
  it("drains: takes no new work, lets running work finish, then closes", async () => {
    const s = await server();
    const g = gate();
    const d = worker(s.url).onMessage(() => g.opened);
    const run = d.run();
    const socket = await s.nextSocket();
    offer(socket, "wk_1");
    await socket.next("work.accepted");
    const stopping = d.stop({ timeoutMs: 5_000 });
    expect(d.state).toBe("draining");
    expect(await socket.next("load", (f) => f.capacity === 0)).toEqual({
      type: "load",
      active: 1,
      capacity: 0,
    });
    offer(socket, "wk_2");
    expect((await socket.next("work.done", (f) => f.workId === "wk_2")).error?.code).toBe("draining");
    g.open();
    expect(await stopping).toEqual({ drained: true, unfinished: { work: [], calls: [] } });
    await run;
    const done = socket.frames.findIndex((f) => f.type === "work.done" && f.workId === "wk_1");
    expect(done).toBeGreaterThan(-1);
    expect((await socket.closed).code).toBe(1000);
    expect(d.state).toBe("closed");
  });

  it("aborts work still running when the bound runs out", async () => {
    const s = await server();
    let aborted: unknown;
    const d = worker(s.url).onMessage(
      (_m, { signal }) =>
        new Promise<void>((_resolve, reject) => {
          signal.addEventListener("abort", () => {
            aborted = signal.reason;
            reject(signal.reason);
          });
        }),
    );
    void d.run();
    const socket = await s.nextSocket();
    offer(socket, "wk_1");
    await socket.next("work.accepted");
    const started = Date.now();
    const result = await d.stop({ timeoutMs: 100 });
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(result).toEqual({ drained: false, unfinished: { work: ["wk_1"], calls: [] } });
    expect((aborted as DispatchError).code).toBe("stopped");
    expect((await socket.next("work.done")).error?.code).toBe("stopped");
  });
});
