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

/**
 * An image referenced by an https URL.
 *
 * @example
 * ```ts
 * ImageUrlSchema.parse({ type: "image", url: "https://example.com/seat-map.png" });
 * ```
 */
export const ImageUrlSchema = z.strictObject({
  type: z.literal("image"),
  url: z.string().regex(/^https:\/\/[^\s]+$/, "must be an https URL"),
});

/**
 * An image carried inline as base64 data with its type.
 *
 * @example
 * ```ts
 * ImageDataSchema.parse({ type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" });
 * ```
 */
export const ImageDataSchema = z.strictObject({
  type: z.literal("image"),
  mimeType: ImageMimeTypeSchema,
  data: z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, "must be base64"),
});

/**
 * An image: an https URL or inline base64 data of a known image type.
 *
 * @example
 * ```ts
 * const image: ImageContent = { type: "image", url: "https://example.com/a.png" };
 * ```
 */
export const ImageContentSchema = z.union([ImageUrlSchema, ImageDataSchema]);

/** An image: an https URL or inline base64 data of a known image type. */
export type ImageContent = z.infer<typeof ImageContentSchema>;

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
