// The page tool backend on a MemoryStore, without sockets: what it commits and broadcasts for the
// page (tool.call, tool.cancel), and which answers it takes (latest delivery only, once).
import type { ToolResult, ToolSpec } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import type { ToolCallHandlers } from "../extensions/dispatch-seams";
import { silentLogger } from "../observability/logger";
import { memorySession } from "../testing/memory-session";
import { PageToolBackend } from "./page-tool-backend";
import type { RoutedToolCall } from "./tool-backend";

const spec: ToolSpec = {
  name: "get_location",
  description: "Where the person is",
  parameters: { type: "object", properties: {} },
};
const done: ToolResult = { outcome: "completed", content: { text: "Berlin", images: [] } };

function call(callId: string): RoutedToolCall {
  return { callId, responseId: "r_1", spec, arguments: {}, user: { id: "u_1" }, timeoutMs: 30_000 };
}

/** Handlers that record what the backend reports, and answer holds as the runner would. */
function recordingHandlers(accept = true) {
  const attempts: number[] = [];
  const holds: (number | undefined)[] = [];
  const handlers: ToolCallHandlers = {
    progress() {},
    say() {},
    hold(attempt) {
      holds.push(attempt);
      return accept ? { accepted: true } : { accepted: false, reason: "cancelling" };
    },
    attempt(attempt) {
      attempts.push(attempt);
    },
    approval: async () => ({ outcome: "allowed" }),
  };
  return { handlers, attempts, holds };
}

async function pageSession(attached = true) {
  const session = await memorySession();
  if (attached) session.log.setPageTools("k_1", [spec]);
  return { session, pages: new PageToolBackend(session.log, silentLogger) };
}

describe("PageToolBackend", () => {
  it("fails a call at once when no page that brought the tool is attached", async () => {
    const { session, pages } = await pageSession(false);
    const result = await pages.run(call("call_1"), recordingHandlers().handlers);
    expect(result).toMatchObject({ outcome: "failed", error: { code: "no_page" } });
    expect(session.eventsOf("tool.call")).toEqual([]);
    expect(await session.store.pendingCalls("s_1")).toEqual([]);
  });

  it("records and sends the call, and settles it with the page's result for that delivery", async () => {
    const { session, pages } = await pageSession();
    // What the page's socket would be sent, with what the store held at that moment.
    const logged: unknown[] = [];
    session.log.subscribe((event) => {
      if (event.type === "tool.call") logged.push(session.store.readEvents("s_1", event.seq - 1, 1));
    });
    const running = pages.run(call("call_2"), recordingHandlers().handlers);
    await expect.poll(() => session.eventsOf("tool.call").length).toBe(1);
    const sent = session.eventsOf("tool.call")[0]!;
    expect(sent).toMatchObject({
      call: { id: "call_2", name: "get_location" },
      attempt: 1,
      user: { id: "u_1" },
    });
    // The event is the call's durable record: in the log before it is sent, and no row besides.
    expect(await Promise.all(logged)).toEqual([[sent]]);
    expect(await session.store.pendingCalls("s_1")).toEqual([]);
    expect(pages.result("call_2", 1, done)).toBe(true);
    expect(await running).toEqual(done);
    // A repeat changes nothing.
    expect(pages.result("call_2", 1, { ...done, content: { text: "Paris", images: [] } })).toBe(false);
    await session.log.settled();
    expect(session.eventsOf("tool.call")).toHaveLength(1);
  });

  it("delivers a waiting call again when a page resumes, and takes only the latest delivery's result", async () => {
    const { session, pages } = await pageSession();
    const { handlers, attempts } = recordingHandlers();
    const running = pages.run(call("call_3"), handlers);
    await expect.poll(() => session.eventsOf("tool.call").length).toBe(1);
    await pages.redeliver();
    expect(session.eventsOf("tool.call").map((event) => event.attempt)).toEqual([1, 2]);
    expect(attempts).toEqual([2]);
    expect(pages.result("call_3", 1, done)).toBe(false);
    expect(pages.result("call_3", 3, done)).toBe(false);
    expect(pages.waiting()).toEqual(["call_3"]);
    expect(pages.result("call_3", 2, done)).toBe(true);
    expect(await running).toEqual(done);
  });

  it("lets one answer per delivery through the rate limit for free", async () => {
    const { session, pages } = await pageSession();
    void pages.run(call("call_4"), recordingHandlers().handlers);
    await expect.poll(() => session.eventsOf("tool.call").length).toBe(1);
    expect(pages.claimAnswer("call_4", 1)).toBe(true);
    expect(pages.claimAnswer("call_4", 1)).toBe(false);
    expect(pages.claimAnswer("call_4", 2)).toBe(false);
    await pages.redeliver();
    expect(pages.claimAnswer("call_4", 2)).toBe(true);
    expect(pages.claimAnswer("call_unknown", 1)).toBe(false);
  });

  it("passes holds to the runner for the latest delivery only", async () => {
    const { session, pages } = await pageSession();
    const { handlers, holds } = recordingHandlers(false);
    void pages.run(call("call_5"), handlers);
    await expect.poll(() => session.eventsOf("tool.call").length).toBe(1);
    expect(pages.hold("call_5", undefined)).toEqual({ accepted: false, reason: "cancelling", attempt: 1 });
    expect(pages.hold("call_5", 2)).toEqual({ accepted: false, reason: "stale_attempt", attempt: 2 });
    expect(pages.hold("call_nope", 1)).toMatchObject({ accepted: false, reason: "unknown_call" });
    expect(holds).toEqual([1]);
  });

  it("asks the page to stop a call and lets the page's answer settle it", async () => {
    const { session, pages } = await pageSession();
    const running = pages.run(call("call_6"), recordingHandlers().handlers);
    await expect.poll(() => session.eventsOf("tool.call").length).toBe(1);
    pages.cancel("call_6", "interrupted");
    await expect.poll(() => session.eventsOf("tool.cancel").length).toBe(1);
    expect(session.eventsOf("tool.cancel")[0]).toMatchObject({
      callId: "call_6",
      reason: "interrupted",
      attempt: 1,
    });
    // Still waiting: a cancel is a request, and the page has not answered yet.
    expect(pages.waiting()).toEqual(["call_6"]);
    // A call being cancelled is not delivered again when the page resumes.
    await pages.redeliver();
    expect(session.eventsOf("tool.call")).toHaveLength(1);
    const cancelled: ToolResult = { outcome: "cancelled", content: { text: "stopped", images: [] } };
    expect(pages.result("call_6", 1, cancelled)).toBe(true);
    expect(await running).toEqual(cancelled);
    expect(pages.hold("call_6", 1)).toMatchObject({ accepted: false, reason: "settled" });
  });
});
