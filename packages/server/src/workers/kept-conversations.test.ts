import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import type { ConversationItem, MessageItem } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import { ConversationFollower } from "../testing/conversation-follower";
import type { HostedCallFrame } from "./fit-hosted-call";
import { KeptConversations } from "./kept-conversations";

const MiB = 1024 * 1024;

const message = (id: string, text = `text of ${id}`): MessageItem =>
  Object.freeze({
    type: "message",
    id,
    role: "user",
    text,
    status: "completed",
    createdAt: 1,
  }) as MessageItem;

function call(sessionId: string, conversation: ConversationItem[], callId = "call_1"): HostedCallFrame {
  return {
    type: "hosted.call",
    callId,
    attempt: 1,
    agent: "support",
    sessionId,
    tool: "lookup",
    arguments: {},
    user: { id: "u_1" },
    conversation,
    timeoutMs: 1_000,
  };
}

/** A worker that follows the frames, reading each as it would arrive: as text. */
class FollowingWorker extends ConversationFollower {
  readText(text: string): ConversationItem[] {
    return this.read(JSON.parse(text) as HostedCallFrame);
  }
}

function fitted(kept: KeptConversations, frame: HostedCallFrame, maxBytes = MiB) {
  const answer = kept.fit(frame, maxBytes);
  if (!answer.ok) throw new Error("did not fit");
  return answer;
}

describe("KeptConversations", () => {
  it("sends each item once, then only the new and the replaced ones, and the worker rebuilds the whole", () => {
    const kept = new KeptConversations({ sessions: 10, bytes: MiB });
    const worker = new FollowingWorker();
    const m1 = message("m_1");
    const m2 = message("m_2");
    const first = fitted(kept, call("s_1", [m1, m2]));
    expect(first.frame.conversation).toEqual([m1, m2]);
    expect(first.frame.conversationIds).toEqual(["m_1", "m_2"]);
    expect(worker.readText(first.text)).toEqual([m1, m2]);

    const m2done = message("m_2", "changed");
    const m3 = message("m_3");
    const second = fitted(kept, call("s_1", [m1, m2done, m3], "call_2"));
    expect(second.frame.conversation.map((item) => item.id)).toEqual(["m_2", "m_3"]);
    expect(second.frame.conversationIds).toEqual(["m_1", "m_2", "m_3"]);
    expect(worker.readText(second.text)).toEqual([m1, m2done, m3]);
    // The text is the frame: what the worker parses is what the frame object says.
    expect(JSON.parse(second.text)).toEqual(second.frame);

    // Nothing changed: no item travels, and the window that slid drops m_1 on both ends.
    const third = fitted(kept, call("s_1", [m2done, m3], "call_3"));
    expect(third.frame.conversation).toEqual([]);
    expect(worker.readText(third.text)).toEqual([m2done, m3]);
    expect(worker.sessions.get("s_1")?.has("m_1")).toBe(false);
    const size = Buffer.byteLength(JSON.stringify(m2done)) + Buffer.byteLength(JSON.stringify(m3));
    expect(kept.bytes).toBe(size);
    // An item the window left is not kept here either: should it come back, it travels again.
    const fourth = fitted(kept, call("s_1", [m1, m2done, m3], "call_4"));
    expect(fourth.frame.conversation).toEqual([m1]);
    expect(worker.readText(fourth.text)).toEqual([m1, m2done, m3]);
  });

  it("keeps at most `sessions` sessions, and tells the worker which least recently called one to drop", () => {
    const kept = new KeptConversations({ sessions: 2, bytes: MiB });
    const worker = new FollowingWorker();
    for (const id of ["s_1", "s_2"]) worker.readText(fitted(kept, call(id, [message(`m_${id}`)])).text);
    // s_1 is called again: s_2 is now the least recent.
    const again = fitted(kept, call("s_1", [message("m_s_1")]));
    expect(again.frame.forgetSessions).toBeUndefined();
    worker.readText(again.text);
    const third = fitted(kept, call("s_3", [message("m_s_3")]));
    expect(third.frame.forgetSessions).toEqual(["s_2"]);
    worker.readText(third.text);
    expect([...worker.sessions.keys()].sort()).toEqual(["s_1", "s_3"]);
    expect(kept.size).toBe(2);
    // s_2 comes back: all of its items travel again.
    const back = fitted(kept, call("s_2", [message("m_s_2")]));
    expect(back.frame.conversation.map((item) => item.id)).toEqual(["m_s_2"]);
    expect(back.frame.forgetSessions).toEqual(["s_1"]);
    expect(worker.readText(back.text)).toEqual([message("m_s_2")]);
  });

  it("keeps at most `bytes` of items, dropping the least recent sessions first", () => {
    const item = (id: string) => message(id, "x".repeat(400));
    const one = Buffer.byteLength(JSON.stringify(item("m_a")));
    const kept = new KeptConversations({ sessions: 100, bytes: 2 * one + 10 });
    const worker = new FollowingWorker();
    worker.readText(fitted(kept, call("s_a", [item("m_a")])).text);
    worker.readText(fitted(kept, call("s_b", [item("m_b")])).text);
    const third = fitted(kept, call("s_c", [item("m_c")]));
    expect(third.frame.forgetSessions).toEqual(["s_a"]);
    worker.readText(third.text);
    expect(kept.bytes).toBeLessThanOrEqual(kept.limits.bytes);
    expect([...worker.sessions.keys()]).toEqual(["s_b", "s_c"]);
  });

  it("sends a conversation larger than the worker keeps whole, keeps none of it, and the worker drops its copy", () => {
    const kept = new KeptConversations({ sessions: 10, bytes: 1_000 });
    const worker = new FollowingWorker();
    worker.readText(fitted(kept, call("s_1", [message("m_1")])).text);
    const big = message("m_2", "y".repeat(2_000));
    const whole = fitted(kept, call("s_1", [message("m_1"), big]));
    expect(whole.frame.conversationIds).toBeUndefined();
    expect(whole.frame.conversation).toHaveLength(2);
    expect(worker.readText(whole.text)).toHaveLength(2);
    expect(worker.sessions.has("s_1")).toBe(false);
    expect(kept.size).toBe(0);
    expect(kept.bytes).toBe(0);
  });

  it("falls back to the whole, trimmed frame when the conversation would not fit one frame", () => {
    const kept = new KeptConversations({ sessions: 10, bytes: 64 * MiB });
    const items = Array.from({ length: 70 }, (_, i) => message(`m_${i}`, "z".repeat(1_000)));
    const answer = fitted(kept, call("s_1", items), 64 * 1024);
    expect(answer.frame.conversationIds).toBeUndefined();
    expect(answer.frame.conversationTrimmed).toBe(true);
    expect(Buffer.byteLength(answer.text)).toBeLessThanOrEqual(64 * 1024);
    expect(kept.size).toBe(0);
  });

  it("tells the worker to forget a kept session whose whole frame could not be sent", () => {
    const kept = new KeptConversations({ sessions: 10, bytes: 64 * MiB });
    fitted(kept, call("s_1", [message("m_1")]), 64 * 1024);
    // Arguments alone over the limit: nothing is sent for s_1, which the worker still keeps.
    const huge = { ...call("s_1", [message("m_1")]), arguments: { blob: "q".repeat(70_000) } };
    expect(kept.fit(huge, 64 * 1024).ok).toBe(false);
    const next = fitted(kept, call("s_2", [message("m_2")]), 64 * 1024);
    expect(next.frame.forgetSessions).toEqual(["s_1"]);
    const after = fitted(kept, call("s_3", [message("m_3")]), 64 * 1024);
    expect(after.frame.forgetSessions).toBeUndefined();
  });

  it("takes an equal copy of a kept item as the same item (a session loaded again), and sends a changed one", () => {
    const kept = new KeptConversations({ sessions: 10, bytes: MiB });
    const worker = new FollowingWorker();
    const original = {
      ...message("m_1"),
      images: [{ type: "image" as const, url: "https://example.com/a.png" }],
    };
    worker.readText(fitted(kept, call("s_1", [Object.freeze(original), message("m_2")])).text);
    // The same values in another key order, as a store gives them back.
    const loaded = JSON.parse(
      JSON.stringify({
        createdAt: 1,
        images: original.images,
        status: "completed",
        text: "text of m_1",
        role: "user",
        id: "m_1",
        type: "message",
      }),
    ) as ConversationItem;
    const again = fitted(kept, call("s_1", [loaded, message("m_2", "edited")]));
    expect(again.frame.conversation.map((item) => item.id)).toEqual(["m_2"]);
    expect(worker.readText(again.text)).toEqual([original, message("m_2", "edited")]);
    const changed = { ...original, images: [{ type: "image" as const, url: "https://example.com/b.png" }] };
    const third = fitted(kept, call("s_1", [changed, message("m_2", "edited")]));
    expect(third.frame.conversation).toEqual([changed]);
  });

  it("holds no item alive: once a session's items are gone from memory, they are sent again", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const kept = new KeptConversations({ sessions: 10, bytes: MiB });
    const worker = new FollowingWorker();
    const sent = (() => {
      // Items only the frame and the kept conversations refer to.
      const items = [message("m_1"), message("m_2")];
      worker.readText(fitted(kept, call("s_1", items)).text);
      return new WeakRef(items[0]!);
    })();
    // A WeakRef holds its target until the current job ends.
    await new Promise((resolve) => setTimeout(resolve, 0));
    gc();
    expect(sent.deref()).toBeUndefined();
    const again = fitted(kept, call("s_1", [message("m_1"), message("m_2")]));
    expect(again.frame.conversation.map((item) => item.id)).toEqual(["m_1", "m_2"]);
    expect(worker.readText(again.text)).toEqual([message("m_1"), message("m_2")]);
    expect(kept.bytes).toBe(Buffer.byteLength(JSON.stringify(message("m_1"))) * 2);
  });

  it("sends an empty conversation as to any worker, and the worker keeps nothing of the session", () => {
    const kept = new KeptConversations({ sessions: 10, bytes: MiB });
    const worker = new FollowingWorker();
    worker.readText(fitted(kept, call("s_1", [message("m_1")])).text);
    const empty = fitted(kept, call("s_1", []));
    expect(empty.frame).toEqual(call("s_1", []));
    expect(JSON.parse(empty.text)).toEqual(call("s_1", []));
    expect(worker.readText(empty.text)).toEqual([]);
    expect(worker.sessions.has("s_1")).toBe(false);
    expect(kept.size).toBe(0);
    // The next frame tells the worker nothing more: it was not sent a forget it did not need.
    expect(fitted(kept, call("s_2", [message("m_2")])).frame.forgetSessions).toBeUndefined();
  });
});
