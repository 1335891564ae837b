import { describe, expect, it } from "vitest";
import { type StatusInput, sessionStatus } from "./session-status";

const base: StatusInput = {
  opened: true,
  openFailed: false,
  closed: false,
  connection: "open",
  conversation: [],
  approvals: [],
  activeResponses: 0,
  pending: 0,
  awaitingReply: false,
  lastOutcome: undefined,
};

describe("sessionStatus", () => {
  it("is thinking while a user message waits for its reply to start", () => {
    expect(sessionStatus({ ...base, awaitingReply: true, lastOutcome: "completed" })).toBe("thinking");
    expect(sessionStatus({ ...base, lastOutcome: "completed" })).toBe("idle");
  });

  it("is closed for a closed session, failed when the open failed", () => {
    expect(sessionStatus({ ...base, closed: true })).toBe("closed");
    expect(sessionStatus({ ...base, closed: true, openFailed: true })).toBe("failed");
  });
});
