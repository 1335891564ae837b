import type { ImageMimeType } from "@patchbay/protocol";

/**
 * An image a tool returns: an https URL, a data URI (`data:image/png;base64,...`), or the image
 * bytes. Bytes and base64 data may name their type; it must match what the bytes are.
 *
 * @example
 * ```ts
 * const byUrl: ToolImage = { url: "https://example.com/seat-map.png" };
 * const byBytes: ToolImage = { data: pngBytes, mimeType: "image/png" };
 * ```
 */
export type ToolImage =
  | string
  | Uint8Array
  | ArrayBuffer
  | { url: string }
  | { data: Uint8Array | ArrayBuffer | string; mimeType?: ImageMimeType };

/**
 * A tool result with text and images. Return it from `run` to show the model pictures, such as a
 * seat map; a model that reads only text is told the tool failed.
 *
 * @example
 * ```ts
 * run: async ({ flight_id }) =>
 *   new ToolOutput({ text: `Seat map for ${flight_id}`, images: [{ url: await airline.seatMapUrl(flight_id) }] }),
 * ```
 */
export class ToolOutput {
  /** The text the model is shown. */
  declare readonly text: string;
  /** The images, as the tool gave them; they are checked when the result is built. */
  declare readonly images: readonly ToolImage[];
  constructor(output: { text?: string; images?: readonly ToolImage[] } = {}) {
    this.text = output.text ?? "";
    this.images = output.images ?? [];
  }
}
