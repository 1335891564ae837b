import type { ImageContent } from "@patchbay/protocol";
import type { ModelMessage } from "./language-model";

/**
 * An item of a Responses API `input` as this adapter sends it.
 *
 * @example
 * ```ts
 * const item: ResponsesInputItem = { type: "function_call_output", call_id: "call_1", output: "42" };
 * ```
 */
export type ResponsesInputItem =
  | { role: "system" | "assistant"; content: string }
  | {
      role: "user";
      content: Array<{ type: "input_text"; text: string } | { type: "input_image"; image_url: string }>;
    }
  | { type: "function_call"; call_id: string; name: string; arguments: string }
  | { type: "function_call_output"; call_id: string; output: string }
  | Record<string, unknown>;

function imagePart(image: ImageContent): { type: "input_image"; image_url: string } {
  return {
    type: "input_image",
    image_url: "url" in image ? image.url : `data:${image.mimeType};base64,${image.data}`,
  };
}

/**
 * Translates the conversation into a Responses API `input`: messages as role items (user images as
 * `input_image`), an assistant message's `openai.reasoning` items first (sent back unchanged, as a
 * stateless request with `store: false` must), then its text and its `function_call` items, and
 * each tool result as a `function_call_output`. Images of tool results follow the run of outputs
 * in one user message, with a line naming the call.
 *
 * @example
 * ```ts
 * const body = { model, input: convertToResponsesInput(request.messages), stream: true };
 * ```
 */
export function convertToResponsesInput(messages: ModelMessage[]): ResponsesInputItem[] {
  const out: ResponsesInputItem[] = [];
  let pendingImages: Array<
    { type: "input_text"; text: string } | { type: "input_image"; image_url: string }
  > = [];
  const flushImages = () => {
    if (pendingImages.length > 0) out.push({ role: "user", content: pendingImages });
    pendingImages = [];
  };
  for (const message of messages) {
    if (message.role !== "tool") flushImages();
    switch (message.role) {
      case "system":
        out.push({ role: "system", content: message.content });
        break;
      case "user": {
        const content: Array<
          { type: "input_text"; text: string } | { type: "input_image"; image_url: string }
        > = [];
        if (message.content !== "") content.push({ type: "input_text", text: message.content });
        for (const image of message.images ?? []) content.push(imagePart(image));
        if (content.length > 0) out.push({ role: "user", content });
        break;
      }
      case "assistant":
        for (const part of message.reasoning ?? []) if (part.type === "openai.reasoning") out.push(part.item);
        if (message.content !== "") out.push({ role: "assistant", content: message.content });
        for (const call of message.toolCalls ?? []) {
          out.push({
            type: "function_call",
            call_id: call.id,
            name: call.name,
            arguments: call.argumentsError === undefined ? call.rawArguments : JSON.stringify(call.arguments),
          });
        }
        break;
      case "tool":
        out.push({ type: "function_call_output", call_id: message.toolCallId, output: message.content.text });
        if (message.content.images.length > 0) {
          pendingImages.push({
            type: "input_text",
            text: `Images returned by the tool call ${message.toolCallId} (${message.toolName}):`,
          });
          for (const image of message.content.images) pendingImages.push(imagePart(image));
        }
        break;
    }
  }
  flushImages();
  return out;
}
