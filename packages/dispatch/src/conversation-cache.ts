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
    const kept = this.#sessions.get(frame.sessionId);
    const sent = frame.conversation;
    const items = new Map<string, ConversationItem>();
    for (const item of sent) items.set(item.id, item);
    const conversation: ConversationItem[] = [];
    for (const id of ids) {
      const item = items.get(id) ?? kept?.get(id);
      if (item === undefined) {
        this.#sessions.delete(frame.sessionId);
        return undefined;
      }
      conversation.push(item);
    }
    // Exactly the items named: those older than the window leave with this call.
    if (kept !== undefined && kept.size === ids.length && sent.length === 0) return conversation;
    const next = new Map<string, ConversationItem>();
    for (const item of conversation) next.set(item.id, item);
    this.#sessions.set(frame.sessionId, next);
    return conversation;
  }

  /** Forgets everything (a new connection). */
  clear(): void {
    this.#sessions.clear();
  }
}
