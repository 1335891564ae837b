import type { ConversationItem, ServerToWorkerFrame } from "@patchbay/protocol";

type HostedCall = ServerToWorkerFrame & { type: "hosted.call" };

/**
 * A worker's side of kept conversations, written from the protocol's rules ("Conversations a
 * worker keeps") apart from any SDK's: what it keeps per session, and each call's whole
 * conversation. Throws when a frame names an item it does not keep.
 */
export class ConversationFollower {
  readonly sessions = new Map<string, Map<string, ConversationItem>>();

  read(frame: HostedCall): ConversationItem[] {
    for (const id of frame.forgetSessions ?? []) this.sessions.delete(id);
    if (!frame.conversationIds) {
      this.sessions.delete(frame.sessionId);
      return frame.conversation;
    }
    const kept = this.sessions.get(frame.sessionId);
    const sent = new Map(frame.conversation.map((item) => [item.id, item]));
    const whole = frame.conversationIds.map((id) => {
      const item = sent.get(id) ?? kept?.get(id);
      if (!item) throw new Error(`${frame.callId} names ${id}, which is not kept`);
      return item;
    });
    this.sessions.set(frame.sessionId, new Map(whole.map((item) => [item.id, item])));
    return whole;
  }
}
