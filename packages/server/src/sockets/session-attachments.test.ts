import type { ServerToClientFrame, SessionEvent } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import type { Principal } from "../auth/auth";
import type { LiveSession } from "../sessions/live-session";
import type { SessionDirectory } from "../sessions/session-directory";
import type { SessionListener } from "../sessions/session-log";
import { type AttachmentSocket, SessionAttachments } from "./session-attachments";

/** A socket that logs what it is asked to do, and one session whose log hands over its subscriber. */
function rig(logged: SessionEvent[] = []) {
  const log: string[] = [];
  const socket: AttachmentSocket = {
    id: "k_test",
    isOpen: true,
    send: (frame: ServerToClientFrame | string) => {
      const parsed = (typeof frame === "string" ? JSON.parse(frame) : frame) as { type: string };
      log.push(`send ${parsed.type}`);
    },
    drained: async () => {},
    writeNow: () => log.push("writeNow"),
  };
  let subscriber: SessionListener | undefined;
  const live = {
    id: "s_1",
    runtime: {
      info: { id: "s_1" },
      addSubscriber: (s: SessionListener) => {
        subscriber = s;
      },
      removeSubscriber: () => {},
      setPageTools: () => {},
      readEvents: async (afterSeq: number) => logged.filter((e) => e.seq > afterSeq),
    },
    pages: { redeliver: async () => {} },
  } as unknown as LiveSession;
  const sessions = {
    hold: async () => live,
    releaseHold: () => {},
  } as unknown as SessionDirectory;
  const attachments = new SessionAttachments(socket, sessions, 4);
  return {
    log,
    attachments,
    deliver: (event: SessionEvent) => subscriber!.deliver(event),
  };
}

const principal = { kind: "user", userId: "u_1" } as unknown as Principal;
const base = { sessionId: "s_1", responseId: "r_1" };
const delta = (seq: number) =>
  ({ ...base, seq, type: "text.delta", itemId: "i_1", delta: "Hi" }) as SessionEvent;
const completed = (seq: number) =>
  ({ ...base, seq, type: "response.completed", reason: "stop", text: "Hi" }) as SessionEvent;
const failed = (seq: number) =>
  ({ ...base, seq, type: "response.failed", error: { code: "internal", message: "x" } }) as SessionEvent;

describe("SessionAttachments", () => {
  it("writes a response's end at once, after sending it; other live events wait for the tick", async () => {
    const { log, attachments, deliver } = rig();
    await attachments.attach(principal, "s_1", "q_1", 0, []);
    log.length = 0;
    deliver(delta(1));
    deliver(completed(2));
    deliver(delta(3));
    deliver(failed(4));
    expect(log).toEqual([
      "send text.delta",
      "send response.completed",
      "writeNow",
      "send text.delta",
      "send response.failed",
      "writeNow",
    ]);
  });

  it("does not write early for a response's end replayed from the log", async () => {
    const { log, attachments } = rig([delta(1), completed(2)]);
    await attachments.attach(principal, "s_1", "q_1", 0, []);
    expect(log).toEqual(["send session.opened", "send text.delta", "send response.completed"]);
  });
});
