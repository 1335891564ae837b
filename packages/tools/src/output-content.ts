import type { ImageContent, ToolOutputContent } from "@patchbay/protocol";
import { ToolOutputError } from "./errors";
import { type ToolImage, ToolOutput } from "./tool-output";

/** Whether `value` is a {@link ToolOutput} with images, which need `toImageContent` to be read. */
export function hasImages(value: unknown): boolean {
  return value instanceof ToolOutput && Array.isArray(value.images) && value.images.length > 0;
}

/**
 * `toToolOutputContent` with the image check passed in, so the executor loads image-content.ts
 * only when a result has images: a page's bundle carries it as a chunk of its own. `toImage` may
 * be left out when {@link hasImages} is false.
 */
export function outputContent(
  value: unknown,
  toImage: ((image: ToolImage, path: string) => ImageContent) | undefined,
): ToolOutputContent {
  if (typeof value === "string") return { text: value, images: [] };
  if (value === undefined) return { text: "", images: [] };
  if (value instanceof ToolOutput) {
    if (typeof value.text !== "string") throw new ToolOutputError("text: must be a string", { path: "text" });
    if (!Array.isArray(value.images)) {
      throw new ToolOutputError("images: must be an array", { path: "images" });
    }
    return { text: value.text, images: value.images.map((image, i) => toImage!(image, `images.${i}`)) };
  }
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (error) {
    throw new ToolOutputError(
      `the tool returned a value that cannot be sent as JSON: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  if (text === undefined) {
    throw new ToolOutputError(`the tool returned a ${typeof value}, which has no JSON form`);
  }
  return { text, images: [] };
}
