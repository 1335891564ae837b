import type { ReasoningPart } from "@patchbay/models";
import type { ConversationItem, ToolCallItem } from "@patchbay/protocol";
import type { EventDraft } from "../store/store";

/**
 * The provider's reasoning state of a model reply that made tool calls (Anthropic thinking and
 * redacted_thinking blocks with their signatures, Gemini thought signatures, OpenAI reasoning
 * items) lives on the first tool call item of that reply, in `reasoning`, so the store keeps it
 * with the conversation and a resumed session hands it back to the model. It is model-facing:
 * every place an item leaves the server (events, the HTTP conversation, a hosted call's
 * conversation, a server tool's conversation) passes it through {@link forEndUsers} first.
 */
type WithReasoning = { reasoning?: ReasoningPart[] };

/** The calls of one model reply, the first carrying the reply's reasoning parts. */
export function attachReasoning(items: ToolCallItem[], parts: readonly ReasoningPart[]): void {
  const first = items[0];
  if (first && parts.length > 0) (first as ToolCallItem & WithReasoning).reasoning = [...parts];
}

/** The reasoning parts kept on a batch of calls, in order. */
export function reasoningOfCalls(calls: readonly ToolCallItem[]): ReasoningPart[] {
  return calls.flatMap((call) => (call as ToolCallItem & WithReasoning).reasoning ?? []);
}

/**
 * Each item with reasoning, as end users see it: items are frozen and replaced when they change,
 * so the same item always gives the same object (a worker that keeps items compares them so).
 */
const withoutReasoning = new WeakMap<ConversationItem, ConversationItem>();

/** The item as anyone but the model may see it: without the provider's reasoning state. */
export function forEndUsers<T extends ConversationItem>(item: T): T {
  if (item.type !== "tool_call" || !("reasoning" in item)) return item;
  const known = withoutReasoning.get(item);
  if (known !== undefined) return known as T;
  const { reasoning: _reasoning, ...rest } = item as T & WithReasoning;
  if (Object.isFrozen(item)) withoutReasoning.set(item, Object.freeze(rest) as unknown as ConversationItem);
  return rest as T;
}

/** The event as clients see it: an item it carries passes through {@link forEndUsers}. */
export function eventForEndUsers(event: EventDraft): EventDraft {
  if (!("item" in event) || !event.item) return event;
  const item = forEndUsers(event.item);
  // Most items carry no reasoning: the event is then passed on as it is, not copied.
  return item === event.item ? event : ({ ...event, item } as EventDraft);
}
