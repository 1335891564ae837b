import type { SessionEvent } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import type { ProtocolViolationError } from "./errors";
import { EventSequencer } from "./event-sequencer";
import type { EventPage } from "./http-api";

const ev = (seq: number) =>
  ({ type: "tool.say", sessionId: "s_1", seq, callId: "c", text: `e${seq}` }) as SessionEvent;

function sequencer(log: (after: number) => Promise<EventPage>) {
  const applied: number[] = [];
  const reported: string[] = [];
  const seq = new EventSequencer({
    sessionId: "s_1",
    apply: (event) => applied.push(event.seq),
    fetchAfter: log,
    report: (error: ProtocolViolationError) => reported.push(error.message),
  });
  return { seq, applied, reported };
}

const page = (events: SessionEvent[]): EventPage => ({ events, lastSeq: events.at(-1)?.seq ?? 0 });
const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

describe("EventSequencer", () => {
  it("applies events in order, each once", () => {
    const { seq, applied } = sequencer(() => Promise.reject(new Error("not asked")));
    for (const n of [1, 2, 2, 1, 3]) seq.push(ev(n));
    expect(applied).toEqual([1, 2, 3]);
    expect(seq.lastSeq).toBe(3);
  });

  it("fills a gap from the log, then applies what arrived meanwhile", async () => {
    const asked: number[] = [];
    const { seq, applied, reported } = sequencer(async (after) => {
      asked.push(after);
      return page([ev(2), ev(3)]);
    });
    seq.push(ev(1));
    seq.push(ev(4));
    seq.push(ev(5));
    await tick();
    expect(asked).toEqual([1]);
    expect(applied).toEqual([1, 2, 3, 4, 5]);
    expect(reported).toEqual([]);
  });

  it("reports a hole the log cannot fill, and goes on instead of stalling", async () => {
    const { seq, applied, reported } = sequencer(async () => page([]));
    seq.push(ev(1));
    seq.push(ev(4));
    await tick();
    expect(applied).toEqual([1, 4]);
    expect(reported).toEqual(["events 2..3 of session s_1 are lost"]);
  });

  it("reports a log that cannot be read, and applies nothing after stop", async () => {
    const { seq, applied, reported } = sequencer(() => Promise.reject(new Error("offline")));
    seq.push(ev(2));
    await tick();
    expect(reported[0]).toBe("events after 0 are missing and could not be fetched");
    expect(applied).toEqual([2]);
    seq.stop();
    seq.push(ev(3));
    expect(applied).toEqual([2]);
  });
});
