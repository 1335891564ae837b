import type { ApprovalRequest, ConversationItem, SessionEvent, ToolCallItem } from "@patchbay/protocol";

const NO_ITEMS: readonly ConversationItem[] = Object.freeze([]);

/**
 * What a session shows of its conversation: the items in order (messages and tool calls) and the
 * approvals waiting for the user, kept current by {@link apply}, one session event at a time.
 *
 * A snapshot handed out ({@link items}: `session.conversation`, the `conversation` event, a React
 * render) never changes: a change after it makes the next snapshot, and only once someone asks
 * for it. So an event costs the same however long the conversation is, unless the conversation
 * is read after every event (one copy of the list for each read that follows a change, as many
 * as when every event made a new list).
 */
export class ConversationState {
  /** The items now, changed in place; never handed out. */
  readonly #items: ConversationItem[] = [];
  /** Where each item id sits in `#items`. Items are only ever added at the end. */
  readonly #index = new Map<string, number>();
  /** The snapshot of `#items` handed out since the last change, if any. */
  #snapshot: readonly ConversationItem[] | undefined = NO_ITEMS;
  readonly #approvals = new Map<string, ApprovalRequest>();

  /** The items in order: a snapshot that stays as it is (the same array until the next change). */
  get items(): readonly ConversationItem[] {
    this.#snapshot ??= this.#items.slice();
    return this.#snapshot;
  }

  /** The approvals waiting for the user, oldest first. */
  get approvals(): ReadonlyMap<string, ApprovalRequest> {
    return this.#approvals;
  }

  /** The item with this id, if the conversation has it. */
  item(id: string): ConversationItem | undefined {
    const at = this.#index.get(id);
    return at === undefined ? undefined : this.#items[at];
  }

  /**
   * Applies one session event; whether it changed the items (an event that does not touch them, a
   * reply starting or a tool call to run, changes nothing). `now` stamps an assistant message that
   * starts with a delta.
   */
  apply(event: SessionEvent, now: number): boolean {
    switch (event.type) {
      case "message.created":
      case "message.completed":
      case "conversation.updated":
        this.#put(event.item);
        return true;
      case "text.delta": {
        const existing = this.item(event.itemId);
        this.#put(
          existing?.type === "message"
            ? { ...existing, text: existing.text + event.delta }
            : {
                type: "message",
                id: event.itemId,
                role: "assistant",
                text: event.delta,
                status: "in_progress",
                responseId: event.responseId,
                createdAt: now,
              },
        );
        return true;
      }
      case "tool.progress":
        return this.#patchToolCall(event.callId, { progress: event.text });
      case "tool.held":
        return this.#patchToolCall(event.callId, { held: true });
      case "approval.requested":
        this.#approvals.set(event.approval.id, event.approval);
        return false;
      case "approval.resolved":
        this.#approvals.delete(event.approvalId);
        return false;
      default:
        return false;
    }
  }

  #patchToolCall(callId: string, patch: Partial<ToolCallItem>): boolean {
    const item = this.item(callId);
    if (item?.type !== "tool_call") return false;
    this.#put({ ...item, ...patch });
    return true;
  }

  #put(item: ConversationItem): void {
    this.#snapshot = undefined;
    const at = this.#index.get(item.id);
    if (at !== undefined) this.#items[at] = item;
    else this.#index.set(item.id, this.#items.push(item) - 1);
  }
}
