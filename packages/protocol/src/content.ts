import { z } from "zod";

/**
 * Image types a tool result or a message may carry inline.
 *
 * @example
 * ```ts
 * ImageMimeTypeSchema.parse("image/png");
 * ```
 */
export const ImageMimeTypeSchema = z.enum(["image/png", "image/jpeg", "image/gif", "image/webp"]);

/** An image type a tool result or a message may carry inline. */
export type ImageMimeType = z.infer<typeof ImageMimeTypeSchema>;

// Images are open objects like every other part of the protocol, so a later optional field
// (say `detail` or `alt`) does not break older receivers. What keeps the two kinds apart is
// `ImageContentSchema`, which accepts an image only when exactly one kind fits it, and each kind
// forbids the other's field: an image that carries both a `url` and `data` (with a `mimeType` or
// without) is refused at its `data` rather than guessed at.

/**
 * An image referenced by an https URL.
 *
 * @example
 * ```ts
 * ImageUrlSchema.parse({ type: "image", url: "https://example.com/seat-map.png" });
 * ```
 */
export const ImageUrlSchema = z.object({
  type: z.literal("image"),
  url: z.string().regex(/^https:\/\/[^\s]+$/, "must be an https URL"),
  // An image with a url and data is ambiguous even without a mimeType: refused, not guessed at.
  data: z.never({ error: "an image with a url carries no data" }).optional(),
});

/**
 * An image carried inline as base64 data with its type.
 *
 * @example
 * ```ts
 * ImageDataSchema.parse({ type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" });
 * ```
 */
export const ImageDataSchema = z.object({
  type: z.literal("image"),
  mimeType: ImageMimeTypeSchema,
  data: z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, "must be base64"),
  url: z.never({ error: "an image with data has no url" }).optional(),
});

/**
 * An image: an https URL or inline base64 data of a known image type. Exactly one of the two
 * forms must fit: `{ type, url }` or `{ type, mimeType, data }`, never both.
 *
 * @example
 * ```ts
 * const image: ImageContent = { type: "image", url: "https://example.com/a.png" };
 * ```
 */
export const ImageContentSchema: z.ZodType<ImageContent, ImageContent> = z.xor(
  [ImageUrlSchema, ImageDataSchema],
  { error: "must be either an image { type, url } or an image { type, mimeType, data }, not both" },
  // Typed without the forbidden fields (they are never present in a decoded image), so every
  // type built from this schema keeps `"url" in image` telling the two forms apart.
) as unknown as z.ZodType<ImageContent, ImageContent>;

/** An image: an https URL or inline base64 data of a known image type. */
export type ImageContent =
  | Omit<z.infer<typeof ImageUrlSchema>, "data">
  | Omit<z.infer<typeof ImageDataSchema>, "url">;

/**
 * What a tool returns to the model: text, plus images for models that read them.
 *
 * @example
 * ```ts
 * ToolOutputContentSchema.parse({ text: "Seat map for LH400", images: [] });
 * ```
 */
export const ToolOutputContentSchema = z.object({
  text: z.string(),
  images: z.array(ImageContentSchema).default([]),
});

/** What a tool returns to the model: text, plus images. */
export type ToolOutputContent = z.infer<typeof ToolOutputContentSchema>;
