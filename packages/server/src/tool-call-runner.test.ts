import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ToolCallItem, ToolSpec } from "@patchbay/protocol";
import { afterEach, describe, expect, it } from "vitest";
import { defineAgent } from "./agent-config";
import { ApprovalFlow } from "./approval-flow";
import type { HostedToolHandlers } from "./dispatch-seams";
import { silentLogger } from "./logger";
import { ServerMetrics } from "./metrics";
import { SessionRuntime } from "./session-runtime";
import { SqliteStore } from "./sqlite-store";
import { ToolCallRunner } from "./tool-call-runner";
import type { ToolBackend } from "./tool-location";

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

/** Runs one call through a backend that reports the given deliveries before it answers. */
async function runWithDeliveries(attempts: number[]): Promise<Pick<ToolCallItem, "status" | "attempt">[]> {
  dir = mkdtempSync(join(tmpdir(), "patchbay-runner-"));
  store = new SqliteStore({ dataDir: dir });
  const record = { id: "s_1", agent: "support", userId: "u_1", metadata: {}, createdAt: 0, lastSeq: 0 };
  await store.createSession(record);
  const agent = defineAgent("support", { model: { provider: "scripted" } });
  const runtime = new SessionRuntime(record, agent, [], store, silentLogger);
  const backend: ToolBackend = {
    location: "worker",
    remote: true,
    specs: () => [spec],
    has: (name) => name === spec.name,
    timeoutCeilingMs: () => 120_000,
    run: async (_call, handlers: HostedToolHandlers) => {
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
  return events.flatMap((event) =>
    event.type === "conversation.updated" && event.item.type === "tool_call"
      ? [{ status: event.item.status, attempt: event.item.attempt }]
      : [],
  );
}

describe("ToolCallRunner", () => {
  it("commits nothing for the first delivery: the call's item already says attempt 1", async () => {
    expect(await runWithDeliveries([1])).toEqual([
      { status: "pending", attempt: 1 },
      { status: "running", attempt: 1 },
      { status: "completed", attempt: 1 },
    ]);
  });

  it("records a redelivery's attempt on the call's item", async () => {
    expect(await runWithDeliveries([1, 2])).toEqual([
      { status: "pending", attempt: 1 },
      { status: "running", attempt: 1 },
      { status: "running", attempt: 2 },
      { status: "completed", attempt: 2 },
    ]);
  });
});
