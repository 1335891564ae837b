import type { ImageContent } from "@patchbay/protocol";
import type { ModelMessage } from "./language-model";

/**
 * An Anthropic image block.
 *
 * @example
 * ```ts
 * const block: AnthropicImageBlock = { type: "image", source: { type: "url", url: "https://example.com/a.png" } };
 * ```
 */
export type AnthropicImageBlock = {
  type: "image";
  source: { type: "base64"; media_type: string; data: string } | { type: "url"; url: string };
};

/**
 * A content block of an Anthropic Messages API message as this adapter sends it.
 *
 * @example
 * ```ts
 * const block: AnthropicContentBlock = { type: "tool_result", tool_use_id: "toolu_1", content: [{ type: "text", text: "42" }] };
 * ```
 */
export type AnthropicContentBlock =
  | { type: "text"; text: string }
  | { type: "thinking"; thinking: string; signature: string }
  | { type: "redacted_thinking"; data: string }
  | AnthropicImageBlock
  | { type: "tool_use"; id: string; name: string; input: Record<string, unknown> }
  | {
      type: "tool_result";
      tool_use_id: string;
      content?: Array<{ type: "text"; text: string } | AnthropicImageBlock>;
      is_error?: boolean;
    };

/**
 * An Anthropic Messages API message.
 *
 * @example
 * ```ts
 * const message: AnthropicMessage = { role: "user", content: [{ type: "text", text: "Hi" }] };
 * ```
 */
export interface AnthropicMessage {
  role: "user" | "assistant";
  content: AnthropicContentBlock[];
}

function imageBlock(image: ImageContent): AnthropicImageBlock {
  if ("url" in image) return { type: "image", source: { type: "url", url: image.url } };
  return { type: "image", source: { type: "base64", media_type: image.mimeType, data: image.data } };
}

/**
 * Translates the conversation into the Messages API's `system` and `messages`. System messages
 * join into `system`. Tool results become `tool_result` blocks (with `is_error`, and their images
 * inside the result's content) in a user message; consecutive tool results, and a user message
 * right after them, share one user message, because the API wants user and assistant turns to
 * alternate and every `tool_use` answered in the very next message. An assistant message's
 * Anthropic reasoning parts become its leading `thinking`/`redacted_thinking` blocks; its text is
 * left out when it is only whitespace.
 *
 * @example
 * ```ts
 * const { system, messages } = convertToAnthropicMessages(request.messages);
 * ```
 */
export function convertToAnthropicMessages(messages: ModelMessage[]): {
  system: string | undefined;
  messages: AnthropicMessage[];
} {
  const system: string[] = [];
  const out: AnthropicMessage[] = [];
  const append = (role: "user" | "assistant", blocks: AnthropicContentBlock[]) => {
    if (blocks.length === 0) return;
    const last = out.at(-1);
    if (last !== undefined && last.role === role) last.content.push(...blocks);
    else out.push({ role, content: blocks });
  };
  for (const message of messages) {
    switch (message.role) {
      case "system":
        if (message.content !== "") system.push(message.content);
        break;
      case "user": {
        const blocks: AnthropicContentBlock[] = (message.images ?? []).map(imageBlock);
        if (message.content !== "") blocks.push({ type: "text", text: message.content });
        append("user", blocks);
        break;
      }
      case "assistant": {
        const blocks: AnthropicContentBlock[] = [];
        // Thinking blocks come first, unchanged, as the API requires when tool results follow.
        for (const part of message.reasoning ?? []) {
          if (part.type === "anthropic.thinking") {
            blocks.push({ type: "thinking", thinking: part.thinking, signature: part.signature });
          } else if (part.type === "anthropic.redacted_thinking") {
            blocks.push({ type: "redacted_thinking", data: part.data });
          }
        }
        // The API refuses a text block of only whitespace ("text content blocks must contain
        // non-whitespace text"); models do reply "\n\n" before a tool call.
        if (message.content.trim() !== "") blocks.push({ type: "text", text: message.content });
        for (const call of message.toolCalls ?? []) {
          blocks.push({ type: "tool_use", id: call.id, name: call.name, input: call.arguments });
        }
        append("assistant", blocks);
        break;
      }
      case "tool": {
        const content: Array<{ type: "text"; text: string } | AnthropicImageBlock> = [];
        if (message.content.text !== "") content.push({ type: "text", text: message.content.text });
        for (const image of message.content.images) content.push(imageBlock(image));
        const block: AnthropicContentBlock = { type: "tool_result", tool_use_id: message.toolCallId };
        if (content.length > 0) block.content = content;
        if (message.isError) block.is_error = true;
        append("user", [block]);
        break;
      }
    }
  }
  return { system: system.length > 0 ? system.join("\n\n") : undefined, messages: out };
}
