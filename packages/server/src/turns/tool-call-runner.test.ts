import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ToolCallItem, ToolResult, ToolSpec } from "@patchbay/protocol";
import { afterEach, describe, expect, it, vi } from "vitest";
import { defineAgent } from "../config/agent-config";
import type { ToolCallHandlers } from "../extensions/dispatch-seams";
import { silentLogger } from "../observability/logger";
import { ServerMetrics } from "../observability/metrics";
import { SessionLog } from "../sessions/session-log";
import { SqliteStore } from "../store/sqlite-store";
import type { ToolBackend } from "../tools/tool-backend";
import { ApprovalFlow } from "./approval-flow";
import { ToolCallRunner } from "./tool-call-runner";

let dir: string | undefined;
let store: SqliteStore | undefined;
afterEach(async () => {
  await store?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const spec: ToolSpec = {
  name: "lookup_order",
  description: "Finds an order",
  parameters: { type: "object", properties: { order_id: { type: "string" } } },
};

type Status = Pick<ToolCallItem, "status" | "attempt">;

/** A session's log on a SQLite store of its own (removed after the test). */
async function openLog(agentExtra: Record<string, unknown> = {}) {
  dir = mkdtempSync(join(tmpdir(), "patchbay-runner-"));
  store = new SqliteStore({ dataDir: dir });
  const record = { id: "s_1", agent: "support", userId: "u_1", metadata: {}, createdAt: 0, lastSeq: 0 };
  await store.createSession(record);
  const agent = defineAgent("support", { model: { provider: "scripted" }, ...agentExtra });
  return new SessionLog(record, agent, [], store, silentLogger);
}

/**
 * Runs one call through a backend that reports the given deliveries before it answers: the call's
 * states as the runner committed them, and as the session's log has them (where a transaction's
 * later update of the call takes its earlier one's place).
 */
async function runWithDeliveries(attempts: number[]): Promise<{ committed: Status[]; logged: Status[] }> {
  const runtime = await openLog();
  const committed: Status[] = [];
  const commit = runtime.commit.bind(runtime);
  runtime.commit = (change, options) => {
    for (const item of change.items ?? [])
      if (item.type === "tool_call") committed.push({ status: item.status, attempt: item.attempt });
    return commit(change, options);
  };
  const backend: ToolBackend = {
    location: "worker",
    remote: true,
    specs: () => [spec],
    has: (name) => name === spec.name,
    timeoutCeilingMs: () => 120_000,
    run: async (_call, handlers: ToolCallHandlers) => {
      for (const attempt of attempts) handlers.attempt(attempt);
      return { outcome: "completed", content: { text: "shipped", images: [] } };
    },
    cancel: () => {},
  };
  const runner = new ToolCallRunner({
    runtime,
    approvals: new ApprovalFlow(runtime, { defaultExpiresInMs: 60_000 }),
    backends: [backend],
    user: { id: "u_1" },
    responseId: "r_1",
    signal: new AbortController().signal,
    maxConcurrent: 4,
    progressIntervalMs: 50,
    logger: silentLogger,
    metrics: new ServerMetrics(),
  });
  const [final] = await runner.run([
    { id: "call_1", index: 0, name: "lookup_order", arguments: { order_id: "A1" }, rawArguments: "" },
  ]);
  expect(final).toMatchObject({ status: "completed", attempt: attempts.at(-1) ?? 1 });
  await runtime.settled();
  const events = await runtime.readEvents(0);
  const logged = events.flatMap((event) =>
    event.type === "conversation.updated" && event.item.type === "tool_call"
      ? [{ status: event.item.status, attempt: event.item.attempt }]
      : [],
  );
  return { committed, logged };
}

describe("ToolCallRunner", () => {
  it("commits nothing for the first delivery: the call's item already says attempt 1", async () => {
    const { committed, logged } = await runWithDeliveries([1]);
    expect(committed).toEqual([
      { status: "pending", attempt: 1 },
      { status: "running", attempt: 1 },
      { status: "completed", attempt: 1 },
    ]);
    // Made and started in one tick, one transaction: the log has the call once, running.
    expect(logged).toEqual([
      { status: "running", attempt: 1 },
      { status: "completed", attempt: 1 },
    ]);
  });

  it("records a redelivery's attempt on the call's item", async () => {
    const { committed, logged } = await runWithDeliveries([1, 2]);
    expect(committed).toEqual([
      { status: "pending", attempt: 1 },
      { status: "running", attempt: 1 },
      { status: "running", attempt: 2 },
      { status: "completed", attempt: 2 },
    ]);
    // The updates the transactions joined are one each (which ones join depends on the ticks).
    expect(logged[0]).toMatchObject({ status: "running" });
    expect(logged.at(-1)).toEqual({ status: "completed", attempt: 2 });
  });
});

interface FakeCall {
  callId: string;
  timeoutMs: number;
  handlers: ToolCallHandlers;
  answer: (result: ToolResult) => void;
}

/** A runner over one remote backend whose calls the test answers by hand. */
async function fakeRig(agentExtra: Record<string, unknown> = {}, specExtra: Partial<ToolSpec> = {}) {
  const runtime = await openLog(agentExtra);
  const calls: FakeCall[] = [];
  const cancels: Array<{ callId: string; reason: string }> = [];
  const backend: ToolBackend = {
    location: "worker",
    remote: true,
    specs: () => [{ ...spec, interruptible: true, ...specExtra }],
    has: (name) => name === spec.name,
    timeoutCeilingMs: () => 120_000,
    run: (call, handlers) =>
      new Promise<ToolResult>((answer) =>
        calls.push({ callId: call.callId, timeoutMs: call.timeoutMs, handlers, answer }),
      ),
    cancel: (callId, reason) => cancels.push({ callId, reason }),
  };
  const turn = new AbortController();
  const runner = new ToolCallRunner({
    runtime,
    approvals: new ApprovalFlow(runtime, { defaultExpiresInMs: 60_000 }),
    backends: [backend],
    user: { id: "u_1" },
    responseId: "r_1",
    signal: turn.signal,
    maxConcurrent: 4,
    progressIntervalMs: 50,
    logger: silentLogger,
    metrics: new ServerMetrics(),
  });
  const run = runner.run([
    { id: "m_1", index: 0, name: "lookup_order", arguments: { order_id: "A1" }, rawArguments: "" },
  ]);
  await vi.waitFor(() => expect(calls).toHaveLength(1));
  return { runtime, run, call: calls[0]!, cancels, interrupt: () => turn.abort() };
}

const completed: ToolResult = { outcome: "completed", content: { text: "shipped", images: [] } };

describe("ToolCallRunner: metrics", () => {
  it("counts calls of names no backend has under one label, not one series a made-up name", async () => {
    const runtime = await openLog({});
    const metrics = new ServerMetrics();
    const runner = new ToolCallRunner({
      runtime,
      approvals: new ApprovalFlow(runtime, { defaultExpiresInMs: 60_000 }),
      backends: [],
      user: { id: "u_1" },
      responseId: "r_1",
      signal: new AbortController().signal,
      maxConcurrent: 4,
      progressIntervalMs: 50,
      logger: silentLogger,
      metrics,
    });
    const made = ["zzz_1", "zzz_2", "zzz_3"];
    const items = await runner.run(
      made.map((name, index) => ({ id: `m_${index}`, index, name, arguments: {}, rawArguments: "" })),
    );
    expect(items.map((item) => item.result?.outcome)).toEqual([
      "unknown_tool",
      "unknown_tool",
      "unknown_tool",
    ]);
    const text = await metrics.registry.metrics();
    expect(text).toContain(
      'patchbay_tool_calls_total{tool="(unknown)",location="server",outcome="unknown_tool"} 3',
    );
    expect(text).not.toContain("zzz_");
  });
});

describe("ToolCallRunner: what a host's failure tells the model", () => {
  it("blanks credentials a host copied from a thrown error, in the result and in the log", async () => {
    const { run, call, runtime } = await fakeRig();
    const thrown =
      "could not connect to postgres://booker:s3cr3t@db.internal:5432/flights (Bearer tok_12345)";
    call.answer({
      outcome: "failed",
      content: { text: `The tool lookup_order failed: ${thrown}`, images: [] },
      error: { code: "tool_error", message: `ConnectionError('${thrown}')` },
    });
    const [item] = await run;
    expect(item?.result?.content.text).toBe(
      "The tool lookup_order failed: could not connect to postgres://booker:[REDACTED]@db.internal:5432/flights (Bearer [REDACTED])",
    );
    expect(item?.result?.error).toEqual({
      code: "tool_error",
      message:
        "ConnectionError('could not connect to postgres://booker:[REDACTED]@db.internal:5432/flights (Bearer [REDACTED])')",
    });
    // What the session's clients read (the log's events) is the same.
    await runtime.settled();
    const logged = JSON.stringify(await runtime.readEvents(0));
    expect(logged).not.toContain("s3cr3t");
    expect(logged).not.toContain("tok_12345");
  });

  it("leaves a completed call's output as the tool wrote it", async () => {
    const { run, call } = await fakeRig();
    const output = "Use Authorization: Bearer <your token> against https://user:pass@example.com";
    call.answer({ outcome: "completed", content: { text: output, images: [] } });
    const [item] = await run;
    expect(item?.result?.content.text).toBe(output);
  });
});

describe("ToolCallRunner: one owner for hold, interrupt, timeout", () => {
  it("gives every call 30 s unless its tool says otherwise", async () => {
    const { call } = await fakeRig();
    expect(call.timeoutMs).toBe(30_000);
    call.answer(completed);
  });

  it("after an interrupt tells the model nothing until the far side answers, and a late finish is the result", async () => {
    const { run, call, cancels, interrupt } = await fakeRig();
    interrupt();
    expect(cancels).toEqual([{ callId: call.callId, reason: "interrupted" }]);
    expect(call.handlers.hold(1)).toEqual({ accepted: false, reason: "cancelling" });
    call.answer(completed);
    const [item] = await run;
    expect(item).toMatchObject({ status: "completed", result: completed });
  });

  it("turns the far side's cancelled answer into the one sentence for an interrupt", async () => {
    const { run, call, interrupt } = await fakeRig();
    interrupt();
    call.answer({
      outcome: "cancelled",
      content: { text: "whatever the SDK says", images: [] },
      held: false,
    });
    const [item] = await run;
    expect(item?.result?.content.text).toBe(
      'The call of "lookup_order" was cancelled: the user interrupted.',
    );
  });

  it("a held call is not cancelled by an interrupt; a hold for an older attempt is refused", async () => {
    const { run, call, cancels, interrupt } = await fakeRig();
    call.handlers.attempt(2);
    expect(call.handlers.hold(1)).toEqual({ accepted: false, reason: "stale_attempt" });
    expect(call.handlers.hold(2)).toEqual({ accepted: true });
    interrupt();
    expect(cancels).toEqual([]);
    call.answer(completed);
    const [item] = await run;
    expect(item).toMatchObject({ status: "completed", held: true, attempt: 2 });
  });

  it("after the grace reports the cancel unconfirmed, and records a later answer as lateResult", async () => {
    const { runtime, run, call, interrupt } = await fakeRig({ tool_cancel_grace_ms: 50 });
    interrupt();
    const [item] = await run;
    expect(item).toMatchObject({
      status: "cancelled",
      held: true,
      result: { outcome: "cancelled", error: { code: "cancel_unconfirmed" } },
    });
    expect(item?.result?.content.text).toBe(
      'The call of "lookup_order" was cancelled because the user interrupted, but where it runs did not confirm within 50 ms, so it may still have made its change.',
    );
    call.answer(completed);
    await vi.waitFor(() => {
      const stored = runtime.conversation().find((i) => i.id === call.callId);
      expect(stored).toMatchObject({ status: "cancelled", lateResult: completed });
    });
  });

  it("times a call out at its timeout, held or not, and asks the far side to stop it", async () => {
    const { run, call, cancels } = await fakeRig({}, { timeoutMs: 60 });
    expect(call.handlers.hold()).toEqual({ accepted: true });
    const [item] = await run;
    expect(item).toMatchObject({ status: "timed_out", held: true });
    expect(item?.result?.content.text).toBe('The call of "lookup_order" timed out after 60 ms.');
    expect(cancels).toEqual([{ callId: call.callId, reason: "timed_out" }]);
    expect(call.handlers.hold()).toEqual({ accepted: false, reason: "settled" });
  });
});
