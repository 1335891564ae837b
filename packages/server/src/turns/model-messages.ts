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
  let i = 0;
  while (i < items.length) {
    const item = items[i]!;
    if (item.type === "message") {
      const next = items[i + 1];
      if (item.role === "assistant" && next?.type === "tool_call" && next.responseId === item.responseId) {
        const batch = takeBatch(items, i + 1);
        pushBatch(messages, item, batch);
        i += 1 + batch.length;
        continue;
      }
      pushMessage(messages, item);
      i += 1;
      continue;
    }
    const batch = takeBatch(items, i);
    pushBatch(messages, undefined, batch);
    i += batch.length;
  }
  return messages;
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

function takeBatch(items: readonly ConversationItem[], start: number): ToolCallItem[] {
  const batch: ToolCallItem[] = [];
  const first = items[start];
  for (let j = start; j < items.length; j++) {
    const item = items[j]!;
    if (item.type !== "tool_call" || (first?.type === "tool_call" && item.responseId !== first.responseId))
      break;
    batch.push(item);
  }
  return batch;
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
    rawArguments: JSON.stringify(call.arguments),
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
