import type { ModelCapabilities, ModelMessage } from "./language-model";

/**
 * The note that stands in for an image in a user message sent to a text-only model.
 *
 * @example
 * ```ts
 * content.endsWith(IMAGE_OMITTED_NOTE);
 * ```
 */
export const IMAGE_OMITTED_NOTE = "[image omitted: this model reads text only]";

function plural(count: number): string {
  return count === 1 ? "1 image" : `${count} images`;
}

/**
 * Fits a conversation to what a model can read (the seed's image rule). For a model that reads
 * images the messages are returned unchanged. For a text-only model, each image in a user message
 * is replaced by the short note {@link IMAGE_OMITTED_NOTE}, and a tool result that carries images
 * becomes an error telling the model the tool failed because its result had images it cannot
 * read: a text-only model shown only the text part would act on a result it never saw.
 *
 * @example
 * ```ts
 * const fitted = prepareMessages(request.messages, { images: false, parallelToolCalls: true });
 * ```
 */
export function prepareMessages(messages: ModelMessage[], capabilities: ModelCapabilities): ModelMessage[] {
  if (capabilities.images) return messages;
  return messages.map((message): ModelMessage => {
    if (message.role === "user" && message.images !== undefined && message.images.length > 0) {
      const notes = message.images.map(() => IMAGE_OMITTED_NOTE).join("\n");
      return { role: "user", content: message.content ? `${message.content}\n${notes}` : notes };
    }
    if (message.role === "tool" && message.content.images.length > 0) {
      return {
        ...message,
        isError: true,
        content: {
          text:
            `The tool "${message.toolName}" failed: its result contains ${plural(message.content.images.length)}, ` +
            "and this model reads text only, so the result cannot be shown.",
          images: [],
        },
      };
    }
    return message;
  });
}
