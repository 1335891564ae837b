import { MAX_IMAGE_BYTES } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import { sniffImageType } from "./image-content";
import { toImageContent } from "./tool-output-content";

const PNG = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
const JPEG = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0, 16]);
const GIF = new Uint8Array([0x47, 0x49, 0x46, 0x38, 0x39, 0x61, 1, 0]);
const WEBP = new Uint8Array([0x52, 0x49, 0x46, 0x46, 0, 0, 0, 0, 0x57, 0x45, 0x42, 0x50]);
const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

describe("sniffImageType", () => {
  it("recognises PNG, JPEG, GIF and WebP by magic bytes, and nothing else", () => {
    expect(sniffImageType(PNG)).toBe("image/png");
    expect(sniffImageType(JPEG)).toBe("image/jpeg");
    expect(sniffImageType(GIF)).toBe("image/gif");
    expect(sniffImageType(WEBP)).toBe("image/webp");
    expect(sniffImageType(new TextEncoder().encode("<svg></svg>"))).toBeUndefined();
    expect(
      sniffImageType(new Uint8Array([0x52, 0x49, 0x46, 0x46, 0, 0, 0, 0, 0x57, 0x41, 0x56, 0x45])),
    ).toBeUndefined();
  });
});

describe("toImageContent", () => {
  it("keeps an https URL", () => {
    expect(toImageContent({ url: "https://example.com/map.png" }, "images.0")).toEqual({
      type: "image",
      url: "https://example.com/map.png",
    });
    expect(toImageContent("https://example.com/a", "images.0")).toEqual({
      type: "image",
      url: "https://example.com/a",
    });
  });

  it("turns bytes into base64 data of the sniffed type", () => {
    expect(toImageContent(PNG, "images.0")).toEqual({
      type: "image",
      mimeType: "image/png",
      data: base64(PNG),
    });
    expect(toImageContent(JPEG.buffer as ArrayBuffer, "images.0")).toMatchObject({ mimeType: "image/jpeg" });
    expect(toImageContent({ data: GIF, mimeType: "image/gif" }, "images.0")).toMatchObject({
      mimeType: "image/gif",
    });
  });

  it("accepts a data URI whose declared type matches its bytes", () => {
    expect(toImageContent({ url: `data:image/webp;base64,${base64(WEBP)}` }, "images.0")).toEqual({
      type: "image",
      mimeType: "image/webp",
      data: base64(WEBP),
    });
    expect(toImageContent({ data: base64(PNG) }, "images.0")).toMatchObject({ mimeType: "image/png" });
  });

  it.each([
    [{ url: "http://example.com/a.png" }, "images.0: an image URL must use https, got http"],
    [{ url: "ftp://example.com/a.png" }, "images.0: an image URL must use https, got ftp"],
    [{ url: "not a url" }, 'images.0: "not a url" is not a URL'],
    [
      { url: `data:image/jpeg;base64,${base64(PNG)}` },
      "images.0: declared as image/jpeg but the data is image/png",
    ],
    [
      { url: `data:image/svg+xml;base64,${base64(PNG)}` },
      'images.0: image type "image/svg+xml" is not one of',
    ],
    [{ url: "data:image/png,rawtext" }, 'images.0: a data URI image must be base64-encoded (";base64,")'],
    [{ url: "data:image/png;base64,@@@@" }, "images.0: image data is not valid base64"],
    [
      { data: PNG, mimeType: "image/gif" as const },
      "images.0: declared as image/gif but the bytes are image/png",
    ],
    [new TextEncoder().encode("hello world!"), "images.0: the bytes are not a PNG, JPEG, GIF or WebP image"],
    [
      { data: `data:image/png;base64,${base64(PNG)}`, mimeType: "image/gif" as const },
      "declared as image/gif but the data URI says image/png",
    ],
    [42 as never, "images.0: an image must be an https URL, a data URI, or bytes"],
  ])("refuses %#", (image, message) => {
    expect(() => toImageContent(image, "images.0")).toThrow(message);
  });

  it("refuses images over 5 MB, as bytes or as base64", () => {
    const big = new Uint8Array(MAX_IMAGE_BYTES + 1);
    big.set(PNG);
    expect(() => toImageContent(big, "images.2")).toThrow(
      "images.2: image is 5.0 MB (5242881 bytes), more than the 5.0 MB limit",
    );
    const atLimit = new Uint8Array(MAX_IMAGE_BYTES);
    atLimit.set(PNG);
    expect(toImageContent(atLimit, "images.0")).toMatchObject({ mimeType: "image/png" });
    const bigBase64 = `${base64(PNG)}${"A".repeat(Math.ceil((MAX_IMAGE_BYTES * 4) / 3))}`;
    expect(() =>
      toImageContent({ data: bigBase64.slice(0, bigBase64.length - (bigBase64.length % 4)) }, "images.0"),
    ).toThrow(/more than the 5.0 MB limit/);
  });
});
