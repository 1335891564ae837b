// Over 400 lines: every step of a hosted call's lifecycle against a scripted server, sharing its
// fixture; each describe block is one step.
import type { ConversationItem, ServerToWorkerFrame } from "@patchbay/protocol";
import { type ToolCallContext, Tools } from "@patchbay/tools";
import { afterEach, describe, expect, it } from "vitest";
import { Dispatch } from "./dispatch";
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

async function setup(
  tools: Tools,
  options: { capacity?: number; toolTimeoutMs?: number; logger?: DispatchOptions["logger"] } = {},
) {
  const server = await startScriptedServer();
  servers.push(server);
  const dispatch = new Dispatch({
    capacity: options.capacity ?? 1,
    url: server.url,
    apiKey: "pk",
    secret: "sk",
    backoff: { initialDelayMs: 20, maxDelayMs: 50 },
    env: {},
    ...(options.logger === undefined ? {} : { logger: options.logger }),
  });
  workers.push(dispatch);
  dispatch.host(
    { name: "support", tools },
    options.toolTimeoutMs === undefined ? {} : { toolTimeoutMs: options.toolTimeoutMs },
  );
  return { server, dispatch };
}

const conversation: ConversationItem[] = [
  { type: "message", id: "m_1", role: "user", text: "Where is A1?", status: "completed", createdAt: 1 },
];

function call(
  socket: ScriptedSocket,
  callId: string,
  extra: Partial<ServerToWorkerFrame & { type: "hosted.call" }> = {},
): void {
  socket.send({
    type: "hosted.call",
    callId,
    attempt: 1,
    agent: "support",
    sessionId: "s_1",
    tool: "lookup_order",
    arguments: { order_id: "A1" },
    user: { id: "u_1" },
    conversation,
    timeoutMs: 10_000,
    ...extra,
  });
}

function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

const orderParameters = {
  type: "object",
  properties: { order_id: { type: "string" } },
  required: ["order_id"],
} as const;

describe("hosted tools", () => {
  it("tells the server what it hosts, including tools registered after host()", async () => {
    const tools = new Tools();
    const { server, dispatch } = await setup(tools, { toolTimeoutMs: 60_000 });
    tools.register({
      name: "lookup_order",
      description: "Look up an order",
      parameters: orderParameters,
      run: () => "",
    });
    void dispatch.run();
    const socket = await server.nextSocket();
    expect(socket.hello.hosts).toEqual([
      {
        agent: "support",
        toolTimeoutMs: 60_000,
        tools: [expect.objectContaining({ name: "lookup_order", description: "Look up an order" })],
      },
    ]);
    expect(socket.hello.handles).toEqual({ messages: false, calls: false });
  });

  it("emits hosted.started and hosted.finished to listeners, and runs calls alike with none", async () => {
    const tools = new Tools().register<{ order_id: string }>({
      name: "lookup_order",
      description: "Look up an order",
      parameters: orderParameters,
      run: ({ order_id }) => `Order ${order_id} shipped.`,
    });
    const { server, dispatch } = await setup(tools);
    void dispatch.run();
    const socket = await server.nextSocket();
    call(socket, "call_quiet");
    expect((await socket.next("hosted.result")).result.content.text).toBe("Order A1 shipped.");
    const events: unknown[] = [];
    dispatch.on("hosted.started", (event) => events.push(event));
    dispatch.on("hosted.finished", (event) => events.push(event));
    call(socket, "call_heard");
    await socket.next("hosted.result", (f) => f.callId === "call_heard");
    expect(events).toEqual([
      { callId: "call_heard", agent: "support", tool: "lookup_order", sessionId: "s_1", attempt: 1 },
      { callId: "call_heard", tool: "lookup_order", outcome: "completed" },
    ]);
  });

  it("runs a call with its context and relays progress, say, hold and the result", async () => {
    let seen: Pick<ToolCallContext, "id" | "sessionId" | "user" | "attempt" | "conversation"> | undefined;
    const tools = new Tools().register<{ order_id: string }>({
      name: "lookup_order",
      description: "Look up an order",
      parameters: orderParameters,
      run: async ({ order_id }, _signal, ctx) => {
        seen = {
          id: ctx.id,
          sessionId: ctx.sessionId,
          user: ctx.user,
          attempt: ctx.attempt,
          conversation: ctx.conversation,
        };
        ctx.update("Looking it up");
        await new Promise((r) => setTimeout(r, 5));
        ctx.say("One moment.");
        await ctx.disallowInterruptions();
        return `Order ${order_id} shipped.`;
      },
    });
    const { server, dispatch } = await setup(tools);
    void dispatch.run();
    const socket = await server.nextSocket();
    call(socket, "call_1", { attempt: 2 });
    expect(await socket.next("hosted.hold")).toEqual({ type: "hosted.hold", callId: "call_1", attempt: 2 });
    socket.send({ type: "hosted.hold.ack", callId: "call_1", attempt: 2, accepted: true });
    const result = await socket.next("hosted.result");
    expect(result).toEqual({
      type: "hosted.result",
      callId: "call_1",
      attempt: 2,
      result: { outcome: "completed", content: { text: "Order A1 shipped.", images: [] }, held: true },
    });
    expect(seen).toEqual({ id: "call_1", sessionId: "s_1", user: { id: "u_1" }, attempt: 2, conversation });
    expect(socket.types().filter((t) => t.startsWith("hosted."))).toEqual([
      "hosted.progress",
      "hosted.say",
      "hosted.hold",
      "hosted.result",
    ]);
    expect(await socket.next("hosted.progress")).toEqual({
      type: "hosted.progress",
      callId: "call_1",
      text: "Looking it up",
    });
  });

  it("does not count hosted calls against capacity", async () => {
    const g = gate();
    let running = 0;
    const tools = new Tools().register({
      name: "lookup_order",
      description: "Look up an order",
      parameters: orderParameters,
      run: async () => {
        running++;
        await g.opened;
        return "ok";
      },
    });
    const { server, dispatch } = await setup(tools, { capacity: 1 });
    dispatch.onMessage(() => g.opened);
    void dispatch.run();
    const socket = await server.nextSocket();
    socket.send({
      type: "work.offered",
      workId: "wk_1",
      attempt: 1,
      work: {
        kind: "message",
        message: {
          id: "m_1",
          agent: "support",
          sessionId: "s_1",
          channel: null,
          user: { id: "u_1" },
          text: "hi",
          createdAt: 1,
          metadata: {},
        },
      },
    });
    await socket.next("work.accepted");
    for (const id of ["call_1", "call_2", "call_3"]) call(socket, id);
    await expect.poll(() => running).toBe(3);
    expect(dispatch.active).toBe(1);
    expect(dispatch.hostedCalls).toBe(3);
    g.open();
    await socket.next("hosted.result", (f) => f.callId === "call_3");
  });

  it("joins a redelivered call that still runs and answers a finished one from the store", async () => {
    const g = gate();
    let runs = 0;
    const tools = new Tools().register({
      name: "lookup_order",
      description: "Look up an order",
      parameters: orderParameters,
      run: async () => {
        runs++;
        await g.opened;
        return `run ${runs}`;
      },
    });
    const { server, dispatch } = await setup(tools);
    const joined: number[] = [];
    dispatch.on("hosted.joined", ({ attempt }) => joined.push(attempt));
    void dispatch.run();
    const socket = await server.nextSocket();
    call(socket, "call_1");
    await expect.poll(() => runs).toBe(1);
    call(socket, "call_1", { attempt: 2 });
    await expect.poll(() => joined).toEqual([2]);
    g.open();
    const first = await socket.next("hosted.result");
    expect(first.attempt).toBe(2);
    call(socket, "call_1", { attempt: 3 });
    const again = await socket.next("hosted.result", (f) => f.attempt === 3);
    expect(again.result.content.text).toBe("run 1");
    expect(runs).toBe(1);
  });

  it("keeps running a call across a reconnect and delivers its result on the new socket", async () => {
    const g = gate();
    let runs = 0;
    const tools = new Tools().register({
      name: "lookup_order",
      description: "Look up an order",
      parameters: orderParameters,
      run: async () => {
        runs++;
        await g.opened;
        return "done";
      },
    });
    const { server, dispatch } = await setup(tools);
    void dispatch.run();
    const first = await server.nextSocket();
    call(first, "call_1");
    await expect.poll(() => runs).toBe(1);
    first.drop();
    const second = await server.nextSocket();
    expect(second.hello.running.calls).toEqual(["call_1"]);
    g.open();
    expect((await second.next("hosted.result")).result.content.text).toBe("done");
    expect(runs).toBe(1);
  });

  it("stops a call on the server's interrupt cancel, but not a held one, answering each with its result", async () => {
    const aborted: string[] = [];
    const holdNow = gate();
    const tools = new Tools()
      .register({
        name: "search",
        description: "Search",
        interruptible: true,
        run: (_args, signal, ctx) =>
          new Promise((_resolve, reject) => {
            signal.addEventListener("abort", () => {
              aborted.push(ctx.id);
              reject(signal.reason);
            });
          }),
      })
      .register({
        name: "book",
        description: "Book",
        interruptible: true,
        run: async (_args, _signal, ctx) => {
          const held = await ctx.disallowInterruptions();
          await holdNow.opened;
          return held.aborted ? "aborted" : "booked";
        },
      })
      .register({
        name: "report",
        description: "Report",
        run: async () => {
          await holdNow.opened;
          return "reported";
        },
      });
    const { server, dispatch } = await setup(tools);
    void dispatch.run();
    const socket = await server.nextSocket();
    call(socket, "call_s", { tool: "search", arguments: {} });
    call(socket, "call_b", { tool: "book", arguments: {} });
    call(socket, "call_r", { tool: "report", arguments: {} });
    await socket.next("hosted.hold", (f) => f.callId === "call_b");
    socket.send({ type: "hosted.hold.ack", callId: "call_b", attempt: 1, accepted: true });
    await expect.poll(() => dispatch.hostedCalls).toBe(3);
    await new Promise((resolve) => setTimeout(resolve, 10));
    // The server sends an interrupt's cancel only for interruptible calls (call_r is not).
    for (const callId of ["call_s", "call_b"]) {
      socket.send({ type: "hosted.cancel", callId, reason: "interrupted", attempt: 1 });
    }
    const cancelled = await socket.next("hosted.result", (f) => f.callId === "call_s");
    expect(cancelled.result.outcome).toBe("cancelled");
    expect(aborted).toEqual(["call_s"]);
    holdNow.open();
    expect((await socket.next("hosted.result", (f) => f.callId === "call_b")).result.content.text).toBe(
      "booked",
    );
    expect((await socket.next("hosted.result", (f) => f.callId === "call_r")).result.outcome).toBe(
      "completed",
    );
  });

  it("aborts a held call's held signal when the server's timeout cancels it (finding 1)", async () => {
    let heldAborted = false;
    const tools = new Tools().register({
      name: "book",
      description: "Book",
      run: async (_args, _signal, ctx) => {
        const held = await ctx.disallowInterruptions();
        await new Promise((resolve) => held.addEventListener("abort", resolve));
        heldAborted = true;
        return "never";
      },
    });
    const { server, dispatch } = await setup(tools);
    void dispatch.run();
    const socket = await server.nextSocket();
    call(socket, "call_b", { tool: "book", arguments: {} });
    await socket.next("hosted.hold");
    socket.send({ type: "hosted.hold.ack", callId: "call_b", attempt: 1, accepted: true });
    await new Promise((resolve) => setTimeout(resolve, 10));
    socket.send({ type: "hosted.cancel", callId: "call_b", reason: "timed_out", attempt: 1 });
    const result = await socket.next("hosted.result");
    expect(result.result).toMatchObject({ outcome: "timed_out", held: true });
    await expect.poll(() => heldAborted).toBe(true);
  });

  it("runs a hold only once the server accepts it, and a refused hold throws CallNotHeld", async () => {
    const steps: string[] = [];
    const tools = new Tools().register({
      name: "book",
      description: "Book",
      interruptible: true,
      run: async (_args, _signal, ctx) => {
        steps.push(`${ctx.id}: asks`);
        try {
          await ctx.disallowInterruptions();
        } catch (error) {
          steps.push(`${ctx.id}: ${(error as Error).name}`);
          throw error;
        }
        steps.push(`${ctx.id}: books`);
        return "booked";
      },
    });
    const { server, dispatch } = await setup(tools);
    void dispatch.run();
    const socket = await server.nextSocket();
    call(socket, "call_1", { tool: "book", arguments: {} });
    await socket.next("hosted.hold", (f) => f.callId === "call_1");
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(steps).toEqual(["call_1: asks"]);
    socket.send({ type: "hosted.hold.ack", callId: "call_1", attempt: 1, accepted: true });
    expect((await socket.next("hosted.result", (f) => f.callId === "call_1")).result).toMatchObject({
      outcome: "completed",
      held: true,
    });
    // Refused because a cancel is under way: the call stops as cancelled and books nothing.
    call(socket, "call_2", { tool: "book", arguments: {} });
    await socket.next("hosted.hold", (f) => f.callId === "call_2");
    socket.send({
      type: "hosted.hold.ack",
      callId: "call_2",
      attempt: 1,
      accepted: false,
      reason: "cancelling",
    });
    expect((await socket.next("hosted.result", (f) => f.callId === "call_2")).result).toMatchObject({
      outcome: "cancelled",
      held: false,
    });
    // A cancel that arrives while the hold waits for its answer stops the call too.
    call(socket, "call_3", { tool: "book", arguments: {} });
    await socket.next("hosted.hold", (f) => f.callId === "call_3");
    socket.send({ type: "hosted.cancel", callId: "call_3", reason: "interrupted", attempt: 1 });
    expect((await socket.next("hosted.result", (f) => f.callId === "call_3")).result).toMatchObject({
      outcome: "cancelled",
      held: false,
    });
    expect(steps).toEqual([
      "call_1: asks",
      "call_1: books",
      "call_2: asks",
      "call_2: CallNotHeld",
      "call_3: asks",
      "call_3: CallNotHeld",
    ]);
  });

  it("answers a cancel of a call it finished with that result, and of one it never ran as cancelled", async () => {
    const tools = new Tools().register({ name: "ping", description: "Ping", run: async () => "pong" });
    const { server, dispatch } = await setup(tools);
    void dispatch.run();
    const socket = await server.nextSocket();
    call(socket, "call_1", { tool: "ping", arguments: {} });
    await socket.next("hosted.result", (f) => f.callId === "call_1");
    socket.send({ type: "hosted.cancel", callId: "call_1", reason: "interrupted", attempt: 1 });
    const again = await socket.next("hosted.result", (f) => f.callId === "call_1");
    expect(again).toMatchObject({ attempt: 1, result: { outcome: "completed", content: { text: "pong" } } });
    // The wire form only: what the executor keeps (ids, timing, the value run returned) stays here.
    expect(Object.keys(again.result).sort()).toEqual(["content", "held", "outcome"]);
    socket.send({ type: "hosted.cancel", callId: "call_9", reason: "interrupted", attempt: 3 });
    expect(await socket.next("hosted.result", (f) => f.callId === "call_9")).toMatchObject({
      attempt: 3,
      result: { outcome: "cancelled" },
    });
  });

  it("logs a tool that threw at warn with its stack, call id and session id; the model gets a sentence", async () => {
    const warnings: { msg: string; fields: Record<string, unknown> | undefined }[] = [];
    const tools = new Tools().register({
      name: "lookup_order",
      description: "Look up",
      run: () => {
        throw new TypeError("cannot read properties of undefined (reading 'status')");
      },
    });
    const { server, dispatch } = await setup(tools, {
      logger: { warn: (msg, fields) => warnings.push({ msg, fields }) },
    });
    void dispatch.run();
    const socket = await server.nextSocket();
    call(socket, "call_boom");
    const result = (await socket.next("hosted.result")).result;
    expect(result.outcome).toBe("failed");
    expect(result.content.text).not.toContain("at ");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      msg: "tool lookup_order threw",
      fields: { tool: "lookup_order", callId: "call_boom", sessionId: "s_1" },
    });
    expect((warnings[0]!.fields!.error as Error).stack).toContain("hosted-tools.test.ts");
  });

  it("logs an approval.when that threw as that, not as the tool's run", async () => {
    const warnings: { msg: string; fields: Record<string, unknown> | undefined }[] = [];
    const tools = new Tools().register({
      name: "lookup_order",
      description: "Look up",
      approval: {
        title: "Look it up?",
        when: () => {
          throw new Error("credit service down");
        },
      },
      run: () => "found",
    });
    const { server, dispatch } = await setup(tools, {
      logger: { warn: (msg, fields) => warnings.push({ msg, fields }) },
    });
    void dispatch.run();
    const socket = await server.nextSocket();
    call(socket, "call_when");
    const result = (await socket.next("hosted.result")).result;
    expect(result).toMatchObject({ outcome: "failed", error: { code: "approval_check_failed" } });
    expect(warnings).toEqual([
      {
        msg: "approval.when of tool lookup_order threw",
        fields: expect.objectContaining({ tool: "lookup_order", callId: "call_when" }),
      },
    ]);
  });

  it("answers a call for a tool it does not host as unknown", async () => {
    const tools = new Tools().register({ name: "lookup_order", description: "Look up", run: () => "x" });
    const { server, dispatch } = await setup(tools);
    void dispatch.run();
    const socket = await server.nextSocket();
    call(socket, "call_x", { tool: "delete_everything", arguments: {} });
    expect((await socket.next("hosted.result")).result).toMatchObject({
      outcome: "unknown_tool",
      error: { code: "unknown_tool" },
    });
  });

  it("lets hosted calls finish before stop() closes", async () => {
    const g = gate();
    const tools = new Tools().register({
      name: "lookup_order",
      description: "Look up",
      run: async () => {
        await g.opened;
        return "late but done";
      },
    });
    const { server, dispatch } = await setup(tools);
    void dispatch.run();
    const socket = await server.nextSocket();
    call(socket, "call_1", { arguments: {} });
    await expect.poll(() => dispatch.hostedCalls).toBe(1);
    const stopping = dispatch.stop({ timeoutMs: 5_000 });
    setTimeout(() => g.open(), 50);
    expect(await stopping).toEqual({ drained: true, unfinished: { work: [], calls: [] } });
    expect((await socket.next("hosted.result")).result.content.text).toBe("late but done");
  });
});
