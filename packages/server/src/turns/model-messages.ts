import type { ModelMessage } from "@patchbay/models";
import type { ConversationItem, MessageItem, NormalizedToolCall, ToolCallItem } from "@patchbay/protocol";
import { ModelSentences } from "@patchbay/tools";
import { reasoningOfCalls } from "./reasoning-state";

/**
 * Builds the messages a model is given from the session's conversation: the agent's
 * instructions, then each message, and for each batch of tool calls an assistant message that
 * makes them followed by one tool message per call (also for calls that never ran, so every call
 * the model made has an answer, which providers require). The provider's reasoning state kept
 * on a batch's calls (see reasoning-state.ts) goes back with the calls' message.
 */
export function toModelMessages(instructions: string, items: readonly ConversationItem[]): ModelMessage[] {
  const messages: ModelMessage[] = [];
  if (instructions.trim()) messages.push({ role: "system", content: instructions });
  const at = (i: number) => items[i];
  for (let i = 0; i < items.length; ) {
    const end = segmentEnd(at, i, items.length);
    pushSegment(messages, at, i, end);
    i = end;
  }
  return messages;
}

/** A conversation item by position (absolute positions for a window that dropped its first ones). */
export type ItemAt = (position: number) => ConversationItem | undefined;

/**
 * Where the segment that starts at `start` ends (exclusive): the items that make one group of
 * model messages, which is a message alone, an assistant message with the batch of calls that
 * follows it, or a batch of calls. A segment's messages depend on its items alone, which is what
 * lets {@link ModelMessageLog} rebuild only the segments whose items changed.
 */
export function segmentEnd(at: ItemAt, start: number, end: number): number {
  const item = at(start)!;
  if (item.type === "message") {
    const next = start + 1 < end ? at(start + 1) : undefined;
    if (item.role === "assistant" && next?.type === "tool_call" && next.responseId === item.responseId) {
      return batchEnd(at, start + 1, end);
    }
    return start + 1;
  }
  return batchEnd(at, start, end);
}

/** Appends the messages of the segment `[start, end)` (see {@link segmentEnd}). */
export function pushSegment(messages: ModelMessage[], at: ItemAt, start: number, end: number): void {
  const item = at(start)!;
  if (item.type === "message" && end === start + 1) {
    pushMessage(messages, item);
    return;
  }
  const batch: ToolCallItem[] = [];
  for (let i = item.type === "message" ? start + 1 : start; i < end; i++) batch.push(at(i) as ToolCallItem);
  pushBatch(messages, item.type === "message" ? item : undefined, batch);
}

/** The end of the batch of calls that starts at `start`: calls of one response, in a row. */
function batchEnd(at: ItemAt, start: number, end: number): number {
  const first = at(start);
  let j = start;
  for (; j < end; j++) {
    const item = at(j)!;
    if (item.type !== "tool_call" || (first?.type === "tool_call" && item.responseId !== first.responseId))
      break;
  }
  return j;
}

function pushMessage(messages: ModelMessage[], item: MessageItem): void {
  if (item.role === "user") {
    const message: ModelMessage = { role: "user", content: item.text };
    if (item.images && item.images.length > 0) message.images = item.images;
    messages.push(message);
  } else if (item.text) {
    messages.push({ role: "assistant", content: item.text });
  }
}

/**
 * The JSON text of committed calls' arguments, made once per arguments object. A call's item is
 * replaced at each change of its status, but its arguments stay the same object, and a committed
 * (frozen) item never changes (item-json.ts keeps its text by the same rule). The model's messages
 * rebuild a batch's segment each time one of its items changes (four or five times a turn with
 * one call), and arguments can be large (a file's text).
 */
const argumentTexts = new WeakMap<object, string>();

function argumentsText(call: ToolCallItem): string {
  if (!Object.isFrozen(call)) return JSON.stringify(call.arguments);
  let text = argumentTexts.get(call.arguments);
  if (text === undefined) {
    text = JSON.stringify(call.arguments);
    argumentTexts.set(call.arguments, text);
  }
  return text;
}

function pushBatch(
  messages: ModelMessage[],
  assistant: MessageItem | undefined,
  batch: ToolCallItem[],
): void {
  // The model knows its calls by the ids it gave them; the server's own ids never reach it.
  const toolCalls: NormalizedToolCall[] = batch.map((call, index) => ({
    id: providerId(call),
    index,
    name: call.name,
    arguments: call.arguments,
    rawArguments: argumentsText(call),
  }));
  const reasoning = reasoningOfCalls(batch);
  messages.push({
    role: "assistant",
    content: assistant?.text ?? "",
    toolCalls,
    ...(reasoning.length > 0 ? { reasoning } : {}),
  });
  for (const call of batch) {
    if (call.result) {
      messages.push({
        role: "tool",
        toolCallId: providerId(call),
        toolName: call.name,
        content: call.result.content,
        isError: call.result.outcome !== "completed",
      });
    } else {
      messages.push({
        role: "tool",
        toolCallId: providerId(call),
        toolName: call.name,
        content: { text: ModelSentences.unfinished(call.status), images: [] },
        isError: true,
      });
    }
  }
}

/** The id the model gave a call (items stored before the server minted its own have only `id`). */
function providerId(call: ToolCallItem): string {
  return call.providerCallId ?? call.id;
}
