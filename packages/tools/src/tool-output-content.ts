import type { ToolOutputContent } from "@patchbay/protocol";
import { toImageContent } from "./image-content";
import { outputContent } from "./output-content";

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
