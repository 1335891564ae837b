import type { ToolOutputContent } from "@patchbay/protocol";
import { ToolOutputError } from "./errors";
import { toImageContent } from "./image-content";
import { ToolOutput } from "./tool-output";

/**
 * Turns what a tool's `run` returned into what the model is shown: a string as is, `undefined`
 * as empty text, a {@link ToolOutput} as text plus checked images, any other value as JSON.
 * Throws a {@link ToolOutputError} for a bad image or a value with no JSON form (a function, a
 * bigint, a cycle).
 *
 * @example
 * ```ts
 * toToolOutputContent({ seats: 2 }); // { text: '{"seats":2}', images: [] }
 * toToolOutputContent(new ToolOutput({ text: "Map", images: [{ url: "https://x.test/m.png" }] }));
 * ```
 */
export function toToolOutputContent(value: unknown): ToolOutputContent {
  if (typeof value === "string") return { text: value, images: [] };
  if (value === undefined) return { text: "", images: [] };
  if (value instanceof ToolOutput) {
    if (typeof value.text !== "string") throw new ToolOutputError("text: must be a string", { path: "text" });
    if (!Array.isArray(value.images)) {
      throw new ToolOutputError("images: must be an array", { path: "images" });
    }
    return { text: value.text, images: value.images.map((image, i) => toImageContent(image, `images.${i}`)) };
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
