import { afterEach, describe, expect, it, vi } from "vitest";
import { type ClientError, DisconnectedError, TimeoutError } from "./errors";
import { PendingRequests, type RequestFrame } from "./pending-requests";

const create = (requestId: string): RequestFrame => ({
  type: "session.create",
  requestId,
  agent: "a",
  tools: [],
});
const resume = (requestId: string): RequestFrame => ({
  type: "session.resume",
  requestId,
  sessionId: "s_1",
  afterSeq: 0,
  tools: [],
});

function track(
  requests: PendingRequests<string, string>,
  frame: RequestFrame,
  repeatable: boolean,
  context = "",
) {
  const outcome: { value?: string; error?: ClientError } = {};
  const request = requests.add(
    frame,
    { repeatable, context, what: frame.type },
    (value) => {
      outcome.value = value;
    },
    (error) => {
      outcome.error = error;
    },
  );
  return { request, outcome };
}

afterEach(() => {
  vi.useRealTimers();
});

describe("PendingRequests", () => {
  it("answers a request once, and fails one nobody answers in time", () => {
    vi.useFakeTimers();
    const requests = new PendingRequests<string, string>(1_000);
    const answered = track(requests, create("r1"), false);
    const forgotten = track(requests, create("r2"), false);
    requests.settle(answered.request, { value: "session" });
    requests.settle(answered.request, new DisconnectedError("late"));
    expect(answered.outcome).toEqual({ value: "session" });
    vi.advanceTimersByTime(1_000);
    expect(forgotten.outcome.error).toBeInstanceOf(TimeoutError);
    expect(forgotten.outcome.error?.message).toBe("session.create got no answer within 1000 ms");
    expect(requests.get("r2")).toBeUndefined();
  });

  it("writes unsent requests on a welcome, and on a loss fails a sent create but keeps a resume", () => {
    const requests = new PendingRequests<string, string>(60_000);
    const created = track(requests, create("r1"), false);
    const resumed = track(requests, resume("r2"), true);
    const renewed = track(requests, resume("r3"), true, "known session");
    const written: string[] = [];
    requests.sendUnsent((frame) => written.push(frame.requestId) > 0);
    expect(written).toEqual(["r1", "r2", "r3"]);
    requests.lost("reset", (request) => request.context === "known session");
    expect(created.outcome.error?.message).toBe("session.create was cut off: reset");
    expect(resumed.outcome).toEqual({});
    expect(resumed.request.sent).toBe(false);
    expect(requests.get("r3")).toBeUndefined();
    expect(renewed.outcome).toEqual({});
    requests.failAll(() => new DisconnectedError("closed"));
    expect(resumed.outcome.error?.message).toBe("closed");
  });

  it("makes the error of failAll only for a request that waits", () => {
    const requests = new PendingRequests<string, string>(60_000);
    let made = 0;
    const fail = () => {
      made++;
      return new DisconnectedError("closed");
    };
    requests.failAll(fail);
    expect(made).toBe(0);
    const created = track(requests, create("r1"), false);
    requests.failAll(fail);
    expect(made).toBe(1);
    expect(created.outcome.error?.message).toBe("closed");
  });
});
