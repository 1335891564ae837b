import { describe, expect, expectTypeOf, it } from "vitest";
import type { ServerToClientFrame, SessionEvent } from "./client-frames";
import { isResponseEnd } from "./response-end";

const base = { sessionId: "s_1", seq: 1, responseId: "r_1" };

describe("isResponseEnd", () => {
  it("is true for response.completed and response.failed only", () => {
    const events: SessionEvent[] = [
      { ...base, type: "response.completed", reason: "stop", text: "Done." },
      { ...base, type: "response.failed", error: { code: "internal", message: "no" } },
      { ...base, type: "response.started" },
      { ...base, type: "text.delta", itemId: "m_1", delta: "Do" },
    ];
    expect(events.map((event) => isResponseEnd(event))).toEqual([true, true, false, false]);
  });

  it("is false for frames that are not session events", () => {
    const frame: ServerToClientFrame = { type: "pong", nonce: "n" };
    expect(isResponseEnd(frame)).toBe(false);
    expect(isResponseEnd({ type: "response.completed.later" })).toBe(false);
  });

  it("narrows the event to the two endings", () => {
    const event = { ...base, type: "response.completed", reason: "stop", text: "Done." } as SessionEvent;
    if (isResponseEnd(event)) {
      expectTypeOf(event.type).toEqualTypeOf<"response.completed" | "response.failed">();
    } else {
      expect.unreachable();
    }
  });
});
