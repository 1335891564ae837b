import type { ImageContent, ToolOutputContent } from "@patchbay/protocol";
import { checkImage } from "./image-content";
import { IMAGE_RULES } from "./image-rules";
import { outputContent } from "./output-content";
import type { ToolImage } from "./tool-output";

/**
 * Checks one image a tool returned and turns it into the wire form: an https URL stays a URL;
 * bytes and data URIs become base64 data of a sniffed, known type. Anything else throws a
 * {@link ToolOutputError} naming `path` and what was wrong.
 *
 * @example
 * ```ts
 * toImageContent({ url: "https://example.com/a.png" }, "images.0"); // { type: "image", url: ... }
 * toImageContent("data:image/gif;base64,R0lGODlhAQABAAAAACw=", "images.1");
 * ```
 */
export function toImageContent(image: ToolImage, path: string): ImageContent {
  return checkImage(image, path, IMAGE_RULES);
}

/**
 * Turns what a tool's `run` returned into what the model is shown: a string as is, `undefined`
 * as empty text, a {@link ToolOutput} as text plus checked images, any other value as JSON.
 * Throws a `ToolOutputError` for a bad image or a value with no JSON form (a function, a
 * bigint, a cycle).
 *
 * @example
 * ```ts
 * toToolOutputContent({ seats: 2 }); // { text: '{"seats":2}', images: [] }
 * toToolOutputContent(new ToolOutput({ text: "Map", images: [{ url: "https://x.test/m.png" }] }));
 * ```
 */
export function toToolOutputContent(value: unknown): ToolOutputContent {
  return outputContent(value, toImageContent);
}
