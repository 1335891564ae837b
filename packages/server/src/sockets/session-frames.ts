import type { ClientToServerFrame, ServerToClientFrame, ToolSpec } from "@patchbay/protocol";
import type { Principal } from "../auth/auth";
import type { SessionDirectory } from "../sessions/session-directory";
import type { SessionAttachments } from "./session-attachments";

/** A client frame about sessions: everything but the connection's own hello and heartbeat. */
export type SessionFrame = Exclude<ClientToServerFrame, { type: "hello" | "ping" | "pong" }>;

/** What a session frame is handled with: who sent it and the sessions open for them. */
export interface SessionFrameContext {
  principal: Principal;
  /** The connection id (page tools are kept per connection). */
  connectionId: string;
  directory: SessionDirectory;
  attachments: SessionAttachments;
  /** Refuses page tools whose schemas cannot be checked in bounded time (the socket guards). */
  checkTools?: ((tools: readonly ToolSpec[] | undefined) => void) | undefined;
  send(frame: ServerToClientFrame): void;
}

/**
 * A page's `tool.result`: handed to the session's page tool backend, which takes it when it
 * answers the call's latest delivery. Synchronous, so a socket with no other frame in hand can
 * take it at once (client-socket.ts).
 */
export function answerPageCall(
  frame: Extract<SessionFrame, { type: "tool.result" }>,
  attachments: SessionAttachments,
): void {
  attachments.require(frame.sessionId).live.pages.result(frame.callId, frame.attempt, frame.result);
}

/**
 * What a client's session frame means, in one place for a client socket and for a connection
 * relayed from another node of a cluster (`client-relay.ts`).
 */
export async function handleSessionFrame(frame: SessionFrame, context: SessionFrameContext): Promise<void> {
  const { principal, attachments } = context;
  switch (frame.type) {
    case "session.create": {
      context.checkTools?.(frame.tools);
      const info = await context.directory.create(principal, frame.agent, {
        ...(frame.userId === undefined ? {} : { userId: frame.userId }),
        ...(frame.metadata === undefined ? {} : { metadata: frame.metadata }),
      });
      // The record just written: the session's first load needs nothing read back.
      await attachments.attach(principal, info.id, frame.requestId, 0, frame.tools, info);
      return;
    }
    case "session.resume":
      context.checkTools?.(frame.tools);
      await attachments.attach(principal, frame.sessionId, frame.requestId, frame.afterSeq, frame.tools);
      return;
    case "session.close":
      attachments.require(frame.sessionId);
      attachments.detach(frame.sessionId);
      return;
    case "message.send": {
      const { live } = attachments.require(frame.sessionId);
      await live.sendMessage({
        commandId: frame.commandId,
        text: frame.text,
        sender: principal.kind,
        ...(frame.images === undefined ? {} : { images: frame.images }),
      });
      return;
    }
    case "interrupt":
      await attachments.require(frame.sessionId).live.interrupt(frame.commandId);
      return;
    case "tools.update": {
      const { live } = attachments.require(frame.sessionId);
      context.checkTools?.(frame.tools);
      live.runtime.setPageTools(context.connectionId, frame.tools);
      return;
    }
    case "tool.progress":
      attachments.require(frame.sessionId).live.pages.progress(frame.callId, frame.text);
      return;
    case "tool.say":
      attachments.require(frame.sessionId).live.pages.say(frame.callId, frame.text);
      return;
    case "tool.hold": {
      const answer = attachments.require(frame.sessionId).live.pages.hold(frame.callId, frame.attempt);
      context.send({
        type: "tool.hold.ack",
        sessionId: frame.sessionId,
        callId: frame.callId,
        attempt: answer.attempt,
        accepted: answer.accepted,
        ...(answer.reason === undefined ? {} : { reason: answer.reason }),
      });
      return;
    }
    case "tool.approval": {
      // Answered when the user has: the question must not hold up this socket's other frames.
      const pages = attachments.require(frame.sessionId).live.pages;
      void pages.approval(frame.callId, frame.attempt).then((answer) =>
        context.send({
          type: "tool.approval.ack",
          sessionId: frame.sessionId,
          callId: frame.callId,
          attempt: answer.attempt,
          outcome: answer.outcome,
          ...(answer.reason === undefined ? {} : { reason: answer.reason }),
        }),
      );
      return;
    }
    case "tool.result":
      answerPageCall(frame, attachments);
      return;
    case "approval.decide":
      attachments
        .require(frame.sessionId)
        .live.approvals.decide(frame.approvalId, frame.allowed, frame.reason);
      return;
  }
}
