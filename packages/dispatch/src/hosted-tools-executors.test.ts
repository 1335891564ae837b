import type { ServerToWorkerFrame, WorkerToServerFrame } from "@patchbay/protocol";
import { type ToolCallContext, Tools } from "@patchbay/tools";
import { describe, expect, it } from "vitest";
import { HostedTools, type HostedToolsOptions } from "./hosted-tools";

type Result = WorkerToServerFrame & { type: "hosted.result" };

function rig(run: (ctx: ToolCallContext) => Promise<string> | string, options: HostedToolsOptions = {}) {
  const results = new Map<string, Result>();
  const waiting = new Map<string, (r: Result) => void>();
  const hosted = new HostedTools(
    {
      send: (frame) => {
        if (frame.type !== "hosted.result") return;
        results.set(frame.callId, frame);
        waiting.get(frame.callId)?.(frame);
      },
      emit: () => undefined,
    },
    options,
  );
  hosted.host(
    {
      name: "support",
      tools: new Tools().register({
        name: "lookup_order",
        description: "Look up",
        run: (_a, _s, ctx) => run(ctx),
      }),
    },
    {},
  );
  const call = (callId: string, sessionId: string, extra: Partial<ServerToWorkerFrame> = {}) =>
    new Promise<Result>((resolve) => {
      waiting.set(callId, resolve);
      hosted.call({
        type: "hosted.call",
        callId,
        attempt: 1,
        agent: "support",
        sessionId,
        tool: "lookup_order",
        arguments: {},
        user: { id: "u_1" },
        conversation: [],
        timeoutMs: 10_000,
        ...extra,
      } as ServerToWorkerFrame & { type: "hosted.call" });
    });
  return { hosted, call, results };
}

describe("hosted tools: session executors", () => {
  it("keeps a session's executor between calls and drops it once idle past the TTL", async () => {
    let clock = 0;
    const { hosted, call } = rig(() => "ok", { idleExecutorTtlMs: 1_000, now: () => clock });
    await call("c1", "s_1");
    await call("c2", "s_1");
    expect(hosted.executorCount).toBe(1);
    clock = 999;
    await call("c3", "s_2");
    expect(hosted.executorCount).toBe(2);
    clock = 2_000; // s_1 idle since 0, s_2 since 999: both expired
    await call("c4", "s_3");
    expect(hosted.executorCount).toBe(1);
    hosted.close();
  });

  it("gives each call its own session's executor while calls of several sessions run at once", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const seen: string[] = [];
    const { hosted, call } = rig(async (ctx) => {
      seen.push(`${ctx.id}@${ctx.sessionId}`);
      await held;
      return ctx.sessionId;
    });
    // The same session twice in a row (the second finds the first's executor running), then
    // interleaved: every call lands in its own session.
    const calls = [
      call("a1", "s_a"),
      call("a2", "s_a"),
      call("b1", "s_b"),
      call("a3", "s_a"),
      call("b2", "s_b"),
    ];
    expect(hosted.executorCount).toBe(2);
    release();
    const texts = (await Promise.all(calls)).map((r) => r.result.content.text);
    expect(texts).toEqual(["s_a", "s_a", "s_b", "s_a", "s_b"]);
    expect(seen.sort()).toEqual(["a1@s_a", "a2@s_a", "a3@s_a", "b1@s_b", "b2@s_b"]);
    // Idle now, s_a's next call with another user gets a new executor (the memo is not used).
    await call("a4", "s_a", { user: { id: "u_2" } });
    expect(hosted.executorCount).toBe(2);
    hosted.close();
  });

  it("reads the latest call's conversation while a call of the session runs, and none once idle", async () => {
    const item = (id: string) =>
      ({ type: "message", id, role: "user", text: id, status: "completed", createdAt: 1 }) as const;
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const contexts: ToolCallContext[] = [];
    const seen: string[][] = [];
    const { hosted, call } = rig(async (ctx) => {
      contexts.push(ctx);
      seen.push(ctx.conversation.map((i) => i.id));
      if (ctx.id === "c1") await held;
      return "ok";
    });
    const first = call("c1", "s_1", { conversation: [item("m_1")] });
    // A second call of the session while the first runs: both read what it brought.
    await call("c2", "s_1", { conversation: [item("m_1"), item("m_2")] });
    expect(contexts[0]!.conversation.map((i) => i.id)).toEqual(["m_1", "m_2"]);
    release();
    await first;
    // No call of the session runs: its items are not kept for a context held past its call.
    expect(contexts[0]!.conversation).toEqual([]);
    expect(contexts[1]!.conversation).toEqual([]);
    // The session's next call (the same executor) reads its own items.
    await call("c3", "s_1", { conversation: [item("m_3")] });
    expect(seen.at(-1)).toEqual(["m_3"]);
    expect(hosted.executorCount).toBe(1);
    hosted.close();
  });

  it("gives an idle session a new executor when the call's user or user name changes", async () => {
    const users: string[] = [];
    const { hosted, call } = rig((ctx) => {
      users.push(`${ctx.user.id}/${ctx.user.name ?? "-"}`);
      return "ok";
    });
    await call("c1", "s_1");
    await call("c2", "s_1", { user: { id: "u_2" } });
    // The same id with a name, then the name changed, then the same again: each call sees its own.
    await call("c3", "s_1", { user: { id: "u_2", name: "Ana" } });
    await call("c4", "s_1", { user: { id: "u_2", name: "Ana B." } });
    await call("c5", "s_1", { user: { id: "u_2", name: "Ana B." } });
    await call("c6", "s_1", { user: { id: "u_2" } });
    expect(users).toEqual(["u_1/-", "u_2/-", "u_2/Ana", "u_2/Ana B.", "u_2/Ana B.", "u_2/-"]);
    expect(hosted.executorCount).toBe(1);
    hosted.close();
  });

  it("makes a new executor for the latest session once it was idle past the TTL", async () => {
    let clock = 0;
    const contexts: ToolCallContext[] = [];
    const { hosted, call } = rig(
      (ctx) => {
        contexts.push(ctx);
        return "ok";
      },
      { idleExecutorTtlMs: 1_000, now: () => clock },
    );
    await call("c1", "s_1");
    clock = 999; // idle for 999 ms: kept
    await call("c2", "s_1");
    clock = 1_999; // idle since 999 for exactly the TTL: expired
    await call("c3", "s_1");
    expect(hosted.executorCount).toBe(1);
    // An executor hands every call the user object of the frame it was made from (each call of
    // the rig brings a new one): the same object, the same executor.
    const users = contexts.map((ctx) => ctx.user);
    expect(users[1]).toBe(users[0]);
    expect(users[2]).not.toBe(users[1]);
    hosted.close();
  });

  it("bounds the idle executors, never dropping one whose call runs, which stays cancellable", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const { hosted, call } = rig(
      async (ctx) => {
        if (ctx.sessionId !== "s_long") return "ok";
        await Promise.race([held, new Promise((resolve) => ctx.signal.addEventListener("abort", resolve))]);
        return ctx.signal.aborted ? "stopped" : "ran out";
      },
      { maxIdleExecutors: 2 },
    );
    const long = call("long", "s_long");
    for (const s of ["s_a", "s_b", "s_c", "s_d"]) await call(`c_${s}`, s);
    // The running session and the two most recently idle ones.
    expect(hosted.executorCount).toBe(3);
    hosted.cancel({
      type: "hosted.cancel",
      callId: "long",
      reason: "session_closed",
    } as ServerToWorkerFrame & {
      type: "hosted.cancel";
    });
    expect((await long).result.outcome).toBe("cancelled");
    release();
    hosted.close();
  });
});
