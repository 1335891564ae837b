import type { ImageContent } from "@patchbay/protocol";
import type { ModelMessage } from "./language-model";

/**
 * A part of a Chat Completions user message.
 *
 * @example
 * ```ts
 * const part: OpenAIContentPart = { type: "image_url", image_url: { url: "https://example.com/a.png" } };
 * ```
 */
export type OpenAIContentPart =
  | { type: "text"; text: string }
  | { type: "image_url"; image_url: { url: string } };

/**
 * A Chat Completions message as this adapter sends it.
 *
 * @example
 * ```ts
 * const message: OpenAIChatMessage = { role: "tool", tool_call_id: "call_1", content: "42" };
 * ```
 */
export type OpenAIChatMessage =
  | { role: "system"; content: string }
  | { role: "user"; content: string | OpenAIContentPart[] }
  | {
      role: "assistant";
      content: string | null;
      tool_calls?: Array<{
        id: string;
        type: "function";
        function: { name: string; arguments: string };
        /** Gemini's thought signature, sent back on the call it came with. */
        extra_content?: { google: { thought_signature: string } };
      }>;
    }
  | { role: "tool"; tool_call_id: string; content: string };

function imagePart(image: ImageContent): OpenAIContentPart {
  const url = "url" in image ? image.url : `data:${image.mimeType};base64,${image.data}`;
  return { type: "image_url", image_url: { url } };
}

/**
 * Translates the conversation into Chat Completions messages. Images in user messages become
 * `image_url` parts (a data URI for inline data); tool results become `role: "tool"` messages.
 * Gemini thought signatures among an assistant message's reasoning parts go back on their calls
 * as `extra_content.google.thought_signature`.
 *
 * The Chat Completions API does not accept images in `tool` messages, so the images of tool
 * results are sent in one user message right after the run of tool messages (not between them:
 * every tool call of an assistant message must be answered before anything else comes), with a
 * line naming the call each image belongs to.
 *
 * @example
 * ```ts
 * const body = { model, messages: convertToOpenAIMessages(request.messages) };
 * ```
 */
export function convertToOpenAIMessages(messages: ModelMessage[]): OpenAIChatMessage[] {
  const out: OpenAIChatMessage[] = [];
  let pendingImages: OpenAIContentPart[] = [];
  const flushImages = () => {
    if (pendingImages.length === 0) return;
    out.push({ role: "user", content: pendingImages });
    pendingImages = [];
  };
  for (const message of messages) {
    if (message.role !== "tool") flushImages();
    switch (message.role) {
      case "system":
        out.push({ role: "system", content: message.content });
        break;
      case "user": {
        const images = message.images ?? [];
        if (images.length === 0) {
          out.push({ role: "user", content: message.content });
        } else {
          const parts: OpenAIContentPart[] = [];
          if (message.content !== "") parts.push({ type: "text", text: message.content });
          for (const image of images) parts.push(imagePart(image));
          out.push({ role: "user", content: parts });
        }
        break;
      }
      case "assistant": {
        const calls = message.toolCalls ?? [];
        if (calls.length === 0) {
          out.push({ role: "assistant", content: message.content });
          break;
        }
        const signatures = new Map<string, string>();
        for (const part of message.reasoning ?? []) {
          if (part.type === "google.thought_signature") signatures.set(part.toolCallId, part.signature);
        }
        out.push({
          role: "assistant",
          content: message.content === "" ? null : message.content,
          tool_calls: calls.map((call) => {
            const signature = signatures.get(call.id);
            return {
              id: call.id,
              type: "function" as const,
              // Arguments that were not valid JSON are sent as `{}`: some OpenAI-compatible servers
              // parse the history's arguments and would reject the whole request.
              function: {
                name: call.name,
                arguments:
                  call.argumentsError === undefined ? call.rawArguments : JSON.stringify(call.arguments),
              },
              ...(signature === undefined
                ? {}
                : { extra_content: { google: { thought_signature: signature } } }),
            };
          }),
        });
        break;
      }
      case "tool": {
        out.push({ role: "tool", tool_call_id: message.toolCallId, content: message.content.text });
        if (message.content.images.length > 0) {
          pendingImages.push({
            type: "text",
            text: `Images returned by the tool call ${message.toolCallId} (${message.toolName}):`,
          });
          for (const image of message.content.images) pendingImages.push(imagePart(image));
        }
        break;
      }
    }
  }
  flushImages();
  return out;
}
