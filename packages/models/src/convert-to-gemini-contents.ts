import type { ImageContent } from "@patchbay/protocol";
import type { ModelMessage } from "./language-model";

/**
 * A part of a Gemini `Content` as this adapter sends it.
 *
 * @example
 * ```ts
 * const part: GeminiPart = { functionResponse: { name: "weather", response: { result: "Sunny" } } };
 * ```
 */
export type GeminiPart =
  | { text: string }
  | { inlineData: { mimeType: string; data: string } }
  | { fileData: { mimeType: string; fileUri: string } }
  | { functionCall: { name: string; args: Record<string, unknown> }; thoughtSignature?: string }
  | { functionResponse: { name: string; response: Record<string, unknown> } };

/**
 * A Gemini `Content`: a turn of the conversation.
 *
 * @example
 * ```ts
 * const content: GeminiContent = { role: "user", parts: [{ text: "Hi" }] };
 * ```
 */
export interface GeminiContent {
  role: "user" | "model";
  parts: GeminiPart[];
}

const IMAGE_TYPES: Record<string, string> = {
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
};

function imagePart(image: ImageContent): GeminiPart {
  if ("data" in image) return { inlineData: { mimeType: image.mimeType, data: image.data } };
  const extension = /\.([a-z0-9]+)(?:[?#].*)?$/i.exec(image.url)?.[1]?.toLowerCase() ?? "";
  return { fileData: { mimeType: IMAGE_TYPES[extension] ?? "image/png", fileUri: image.url } };
}

/**
 * Translates the conversation into Gemini's `systemInstruction` and `contents`. System messages
 * join into the instruction; an assistant message becomes a `model` turn whose function calls
 * carry their thought signatures (from the message's `google.thought_signature` reasoning parts);
 * tool results become `functionResponse` parts of one `user` turn (`{ result }`, or `{ error }`
 * for a failed call), with their images after them. Turns of the same role merge, as the API
 * wants them to alternate.
 *
 * @example
 * ```ts
 * const { systemInstruction, contents } = convertToGeminiContents(request.messages);
 * ```
 */
export function convertToGeminiContents(messages: ModelMessage[]): {
  systemInstruction: { parts: Array<{ text: string }> } | undefined;
  contents: GeminiContent[];
} {
  const system: string[] = [];
  const contents: GeminiContent[] = [];
  const append = (role: "user" | "model", parts: GeminiPart[]) => {
    if (parts.length === 0) return;
    const last = contents.at(-1);
    if (last !== undefined && last.role === role) last.parts.push(...parts);
    else contents.push({ role, parts });
  };
  for (const message of messages) {
    switch (message.role) {
      case "system":
        if (message.content !== "") system.push(message.content);
        break;
      case "user": {
        const parts: GeminiPart[] = (message.images ?? []).map(imagePart);
        if (message.content !== "") parts.push({ text: message.content });
        append("user", parts);
        break;
      }
      case "assistant": {
        const signatures = new Map<string, string>();
        for (const part of message.reasoning ?? []) {
          if (part.type === "google.thought_signature") signatures.set(part.toolCallId, part.signature);
        }
        const parts: GeminiPart[] = [];
        if (message.content.trim() !== "") parts.push({ text: message.content });
        for (const call of message.toolCalls ?? []) {
          const signature = signatures.get(call.id);
          parts.push({
            functionCall: { name: call.name, args: call.arguments },
            ...(signature === undefined ? {} : { thoughtSignature: signature }),
          });
        }
        append("model", parts);
        break;
      }
      case "tool": {
        const response = message.isError ? { error: message.content.text } : { result: message.content.text };
        append("user", [
          { functionResponse: { name: message.toolName, response } },
          ...message.content.images.map(imagePart),
        ]);
        break;
      }
    }
  }
  return {
    systemInstruction: system.length > 0 ? { parts: [{ text: system.join("\n\n") }] } : undefined,
    contents,
  };
}
