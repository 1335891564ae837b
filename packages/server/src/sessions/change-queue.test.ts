import type { SessionEvent, ToolCallItem } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import type { EventDraft, SessionChange } from "../store/store";
import { joinedGroups, type QueuedChange, resolveGroup } from "./change-queue";

const call = (id: string, status: ToolCallItem["status"]): ToolCallItem => ({
  type: "tool_call",
  id,
  name: "lookup_order",
  arguments: {},
  status,
  held: false,
  attempt: 1,
  createdAt: 0,
});
const updated = (item: ToolCallItem): EventDraft => ({ type: "conversation.updated", item });

interface Queued extends QueuedChange {
  got?: SessionEvent[] | null;
}
const queued = (change: SessionChange): Queued => {
  const entry: Queued = {
    change,
    resolve: (events) => {
      entry.got = events;
    },
    reject: () => {},
  };
  return entry;
};
const joinAll = (entries: QueuedChange[]) => joinedGroups(entries, () => true);
/** What the store gives back for a change's events: each with its seq. */
const stored = (events: readonly EventDraft[]) =>
  events.map((event, i) => ({ ...event, sessionId: "s_1", seq: i + 1 }) as SessionEvent);
const describeEvent = (event: EventDraft | SessionEvent) =>
  event.type === "conversation.updated"
    ? `${event.item.id}:${(event.item as ToolCallItem).status}`
    : event.type;

describe("joinedGroups: an item updated twice in one transaction", () => {
  it("goes out once, in its latest state, where it first appeared; each change still gets its own events back", () => {
    const pending = [call("call_1", "pending"), call("call_2", "pending")];
    const entries = [
      queued({
        events: [{ type: "response.started", responseId: "r_1" }, ...pending.map(updated)],
        items: pending,
      }),
      queued({ events: [updated(call("call_1", "running"))], items: [call("call_1", "running")] }),
      queued({ events: [updated(call("call_2", "running"))], items: [call("call_2", "running")] }),
    ];
    const [joined] = joinAll(entries);
    expect(joined!.change.events!.map(describeEvent)).toEqual([
      "response.started",
      "call_1:running",
      "call_2:running",
    ]);
    // The changes' own lists are untouched: a change rejected later is written again as it was.
    expect(entries[0]!.change.events!.map(describeEvent)).toEqual([
      "response.started",
      "call_1:pending",
      "call_2:pending",
    ]);
    resolveGroup(joined!.group, stored(joined!.change.events!), joined!.slots);
    expect(entries.map((e) => e.got!.map((event) => `${describeEvent(event)}@${event.seq}`))).toEqual([
      ["response.started@1", "call_1:running@2", "call_2:running@3"],
      ["call_1:running@2"],
      ["call_2:running@3"],
    ]);
  });

  it("keeps an update in its place when an event after it names the item or is not an update", () => {
    const running = call("call_1", "running");
    const entries = [
      queued({
        events: [updated(running), { type: "tool.progress", callId: "call_1", text: "half" }],
      }),
      queued({ events: [updated({ ...running, progress: "half" })] }),
      queued({ events: [{ type: "response.started", responseId: "r_2" }] }),
      queued({ events: [updated(call("call_1", "completed"))] }),
    ];
    const [joined] = joinAll(entries);
    expect(joined!.change.events!.map(describeEvent)).toEqual([
      "call_1:running",
      "tool.progress",
      "call_1:running",
      "response.started",
      "call_1:completed",
    ]);
    expect(joined!.slots).toBeUndefined();
    resolveGroup(joined!.group, stored(joined!.change.events!), joined!.slots);
    expect(entries.map((e) => e.got!.map((event) => event.seq))).toEqual([[1, 2], [3], [4], [5]]);
  });

  it("leaves two updates of one change as they are, and every change after a joined one in its slots", () => {
    const entries = [
      queued({ events: [updated(call("call_1", "pending")), updated(call("call_1", "running"))] }),
      queued({ events: [updated(call("call_1", "completed")), updated(call("call_2", "pending"))] }),
      queued({ events: [{ type: "response.started", responseId: "r_2" }] }),
    ];
    const [joined] = joinAll(entries);
    expect(joined!.change.events!.map(describeEvent)).toEqual([
      "call_1:pending",
      "call_1:completed",
      "call_2:pending",
      "response.started",
    ]);
    expect(joined!.slots).toEqual([[0, 1], [1, 2], [3]]);
  });
});
