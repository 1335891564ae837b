import type { ApprovalRequest, ConversationItem, SessionEvent, ToolCallItem } from "@patchbay/protocol";

/**
 * What a session shows of its conversation: the items in order (messages and tool calls) and the
 * approvals waiting for the user. Never changed in place: each event that changes it gives a new
 * state, so a snapshot handed out (`session.conversation`, a React render) stays as it was.
 */
export interface ConversationState {
  readonly items: readonly ConversationItem[];
  /**
   * Where each item id sits in `items`, read through {@link itemOf}. Items are only ever added
   * at the end, so the states of one line of events share one index that only grows (a new item
   * adds one entry instead of copying the map): an id whose position is past this state's
   * `items` belongs to a later state, not to this one.
   */
  readonly index: ReadonlyMap<string, number>;
  /** The approvals waiting for the user, oldest first. */
  readonly approvals: ReadonlyMap<string, ApprovalRequest>;
}

/** The state of a session before its first event. */
export const EMPTY_CONVERSATION: ConversationState = { items: [], index: new Map(), approvals: new Map() };

/**
 * The state after one session event: the reducer of the conversation, pure (the same state and
 * event give the same result; `now` stamps an assistant message that starts with a delta). An
 * event that changes nothing here (a reply starting, a tool call to run) gives `state` itself.
 */
export function reduceConversation(
  state: ConversationState,
  event: SessionEvent,
  now: number,
): ConversationState {
  switch (event.type) {
    case "message.created":
    case "message.completed":
    case "conversation.updated":
      return upsert(state, event.item);
    case "text.delta": {
      const existing = itemOf(state, event.itemId);
      if (existing?.type === "message")
        return upsert(state, { ...existing, text: existing.text + event.delta });
      return upsert(state, {
        type: "message",
        id: event.itemId,
        role: "assistant",
        text: event.delta,
        status: "in_progress",
        responseId: event.responseId,
        createdAt: now,
      });
    }
    case "tool.progress":
      return patchToolCall(state, event.callId, { progress: event.text });
    case "tool.held":
      return patchToolCall(state, event.callId, { held: true });
    case "approval.requested": {
      const approvals = new Map(state.approvals);
      approvals.set(event.approval.id, event.approval);
      return { ...state, approvals };
    }
    case "approval.resolved": {
      if (!state.approvals.has(event.approvalId)) return state;
      const approvals = new Map(state.approvals);
      approvals.delete(event.approvalId);
      return { ...state, approvals };
    }
    default:
      return state;
  }
}

/** The item with this id, if the conversation has it. */
export function itemOf(state: ConversationState, id: string): ConversationItem | undefined {
  const at = state.index.get(id);
  // Past this state's items (a later state's item), `items[at]` is undefined.
  return at === undefined ? undefined : state.items[at];
}

function patchToolCall(
  state: ConversationState,
  callId: string,
  patch: Partial<ToolCallItem>,
): ConversationState {
  const item = itemOf(state, callId);
  return item?.type === "tool_call" ? upsert(state, { ...item, ...patch }) : state;
}

function upsert(state: ConversationState, item: ConversationItem): ConversationState {
  const items = [...state.items];
  let index = state.index as Map<string, number>;
  // A position past this state's items is a later state's item (see `ConversationState.index`).
  const at = index.get(item.id) ?? items.length;
  if (at < items.length) items[at] = item;
  else {
    // The newest state of its line (the index holds exactly its items) adds to the shared index;
    // an older one, or the empty state every session starts from, starts an index of its own.
    if (!items.length || index.size !== items.length) index = new Map(items.map((each, i) => [each.id, i]));
    index.set(item.id, items.push(item) - 1);
  }
  return { ...state, items, index };
}
