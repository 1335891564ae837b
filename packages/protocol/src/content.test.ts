import { describe, expect, it } from "vitest";
import { ImageContentSchema, ImageDataSchema, ImageUrlSchema, ToolOutputContentSchema } from "./content";

describe("ImageContentSchema", () => {
  it("accepts an https URL or inline base64 data of a known type", () => {
    expect(ImageContentSchema.parse({ type: "image", url: "https://example.com/a.png" })).toEqual({
      type: "image",
      url: "https://example.com/a.png",
    });
    expect(ImageContentSchema.parse({ type: "image", mimeType: "image/webp", data: "UklGRg==" })).toEqual({
      type: "image",
      mimeType: "image/webp",
      data: "UklGRg==",
    });
  });

  it("ignores fields it does not know, so a later optional field does not break old receivers", () => {
    expect(ImageContentSchema.parse({ type: "image", url: "https://e.com/a.png", detail: "high" })).toEqual({
      type: "image",
      url: "https://e.com/a.png",
    });
  });

  it("refuses an image that is both a URL and inline data, with a mimeType or without", () => {
    for (const extra of [{ mimeType: "image/png" }, {}]) {
      const result = ImageContentSchema.safeParse({
        type: "image",
        url: "https://e.com/a.png",
        data: "iVBORw0KGgo=",
        ...extra,
      });
      expect(result.success).toBe(false);
    }
  });

  it.each([
    [{ type: "image", url: "http://e.com/a.png" }],
    [{ type: "image", url: "https://e.com/a b.png" }],
    [{ type: "image", mimeType: "image/svg+xml", data: "PHN2Zz4=" }],
    [{ type: "image", mimeType: "image/png", data: "not base64" }],
    [{ type: "picture", url: "https://e.com/a.png" }],
    [{ type: "image" }],
  ])("refuses %j", (image) => {
    expect(ImageContentSchema.safeParse(image).success).toBe(false);
  });

  it("keeps the two forms available on their own", () => {
    expect(ImageUrlSchema.safeParse({ type: "image", url: "https://e.com/a.png" }).success).toBe(true);
    expect(ImageDataSchema.safeParse({ type: "image", url: "https://e.com/a.png" }).success).toBe(false);
  });
});

describe("ToolOutputContentSchema", () => {
  it("defaults images to an empty list", () => {
    expect(ToolOutputContentSchema.parse({ text: "ok" })).toEqual({ text: "ok", images: [] });
  });
});
