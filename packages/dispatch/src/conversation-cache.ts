import type { ConversationItem, ServerToWorkerFrame } from "@patchbay/protocol";

type HostedCall = ServerToWorkerFrame & { type: "hosted.call" };

/**
 * How much conversation a worker keeps between hosted calls (`worker.hello.conversationCache`).
 *
 * @example
 * ```ts
 * const worker = new Dispatch({ conversationCache: { sessions: 200, bytes: 16 * 1024 * 1024 } });
 * ```
 */
export interface ConversationCacheOptions {
  /** Sessions whose recent items are kept at most. Default 1,000. */
  sessions?: number;
  /** Bytes of kept items (as JSON) at most, over all sessions. Default 64 MiB. */
  bytes?: number;
}

/**
 * The defaults of {@link ConversationCacheOptions}: 1,000 sessions, 64 MiB.
 *
 * @example
 * ```ts
 * new Dispatch({ conversationCache: { ...DEFAULT_CONVERSATION_CACHE, sessions: 100 } });
 * ```
 */
export const DEFAULT_CONVERSATION_CACHE = { sessions: 1_000, bytes: 64 * 1024 * 1024 } as const;

/**
 * The conversations this worker keeps for one connection, so the server sends each item once.
 * The server decides what is kept (see `hosted.call.conversationIds` in the protocol); this only
 * follows what each frame says, in the order frames arrive. A new connection starts empty.
 */
export class ConversationCache {
  readonly #sessions = new Map<string, Map<string, ConversationItem>>();

  /** Sessions kept now. */
  get size(): number {
    return this.#sessions.size;
  }

  /**
   * The call's whole conversation, oldest first, from the frame's items and those kept; keeps
   * what the frame says to keep. `undefined` when the frame names an item not kept here: the
   * server and the worker are out of step, and only a new connection (which starts both empty)
   * puts them back in step.
   */
  read(frame: HostedCall): ConversationItem[] | undefined {
    if (frame.forgetSessions) for (const id of frame.forgetSessions) this.#sessions.delete(id);
    const ids = frame.conversationIds;
    if (ids === undefined) {
      this.#sessions.delete(frame.sessionId);
      return frame.conversation;
    }
    // The kept map is in conversation order (a changed item keeps its place): it is updated in
    // place, and the items that left the window are the oldest, at its front.
    let kept = this.#sessions.get(frame.sessionId);
    if (kept === undefined) {
      kept = new Map();
      this.#sessions.set(frame.sessionId, kept);
    }
    for (const item of frame.conversation) kept.set(item.id, item);
    const conversation: ConversationItem[] = new Array(ids.length);
    for (let i = 0; i < ids.length; i++) {
      const item = kept.get(ids[i]!);
      if (item === undefined) {
        this.#sessions.delete(frame.sessionId);
        return undefined;
      }
      conversation[i] = item;
    }
    if (kept.size !== ids.length) {
      for (const id of kept.keys()) {
        if (id === ids[0] || kept.size === ids.length) break;
        kept.delete(id);
      }
      // Anything else not named (not expected from a server): keep exactly what was named.
      if (kept.size !== ids.length) {
        kept = new Map(conversation.map((item) => [item.id, item]));
        this.#sessions.set(frame.sessionId, kept);
      }
    }
    return conversation;
  }

  /** Forgets everything (a new connection). */
  clear(): void {
    this.#sessions.clear();
  }
}
