import type { ImageContent, ImageMimeType } from "@patchbay/protocol";
import { MAX_IMAGE_BYTES } from "@patchbay/protocol/lite";
import { ToolOutputError } from "./errors";
import type { ToolImage } from "./tool-output";

const KNOWN_TYPES: readonly ImageMimeType[] = ["image/png", "image/jpeg", "image/gif", "image/webp"];
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const DATA_URI = /^data:([^;,]*)((?:;[^;,]*)*),(.*)$/s;

/**
 * The image type the bytes are, read from their magic numbers, or `undefined` when they are
 * none of PNG, JPEG, GIF or WebP.
 *
 * @example
 * ```ts
 * sniffImageType(new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])); // "image/png"
 * ```
 */
export function sniffImageType(bytes: Uint8Array): ImageMimeType | undefined {
  const at = (offset: number, ...expected: number[]) => expected.every((b, i) => bytes[offset + i] === b);
  if (at(0, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a)) return "image/png";
  if (at(0, 0xff, 0xd8, 0xff)) return "image/jpeg";
  if (at(0, 0x47, 0x49, 0x46, 0x38) && (bytes[4] === 0x37 || bytes[4] === 0x39) && bytes[5] === 0x61)
    return "image/gif";
  if (at(0, 0x52, 0x49, 0x46, 0x46) && at(8, 0x57, 0x45, 0x42, 0x50)) return "image/webp";
  return undefined;
}

function megabytes(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

function checkSize(bytes: number, path: string): void {
  if (bytes > MAX_IMAGE_BYTES) {
    throw new ToolOutputError(
      `${path}: image is ${megabytes(bytes)} (${bytes} bytes), more than the ${megabytes(MAX_IMAGE_BYTES)} limit`,
      { path },
    );
  }
}

// btoa/atob work on "binary strings"; chunking keeps String.fromCharCode under argument limits.
function bytesToBase64(bytes: Uint8Array): string {
  let binary = "";
  const chunk = 0x8000;
  for (let i = 0; i < bytes.length; i += chunk) {
    binary += String.fromCharCode(...bytes.subarray(i, i + chunk));
  }
  return btoa(binary);
}

function base64Head(base64: string, byteCount: number): Uint8Array {
  const chars = Math.ceil(byteCount / 3) * 4;
  const binary = atob(base64.slice(0, Math.min(chars, base64.length - (base64.length % 4))));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

function base64ByteLength(base64: string): number {
  const padding = base64.endsWith("==") ? 2 : base64.endsWith("=") ? 1 : 0;
  return (base64.length / 4) * 3 - padding;
}

function fromBytes(bytes: Uint8Array, declared: ImageMimeType | undefined, path: string): ImageContent {
  checkSize(bytes.byteLength, path);
  const sniffed = sniffImageType(bytes);
  if (!sniffed) {
    throw new ToolOutputError(`${path}: the bytes are not a PNG, JPEG, GIF or WebP image`, { path });
  }
  if (declared !== undefined && declared !== sniffed) {
    throw new ToolOutputError(`${path}: declared as ${declared} but the bytes are ${sniffed}`, { path });
  }
  return { type: "image", mimeType: sniffed, data: bytesToBase64(bytes) };
}

function fromBase64(base64: string, declared: string | undefined, path: string): ImageContent {
  if (base64.length % 4 !== 0 || !BASE64.test(base64)) {
    throw new ToolOutputError(`${path}: image data is not valid base64`, { path });
  }
  if (declared !== undefined && !(KNOWN_TYPES as readonly string[]).includes(declared)) {
    throw new ToolOutputError(
      `${path}: image type ${JSON.stringify(declared)} is not one of ${KNOWN_TYPES.join(", ")}`,
      { path },
    );
  }
  checkSize(base64ByteLength(base64), path);
  const sniffed = sniffImageType(base64Head(base64, 12));
  if (!sniffed) {
    throw new ToolOutputError(`${path}: the data is not a PNG, JPEG, GIF or WebP image`, { path });
  }
  if (declared !== undefined && declared !== sniffed) {
    throw new ToolOutputError(`${path}: declared as ${declared} but the data is ${sniffed}`, { path });
  }
  return { type: "image", mimeType: sniffed, data: base64 };
}

function fromDataUri(uri: string, path: string, declared?: ImageMimeType): ImageContent {
  const match = DATA_URI.exec(uri);
  if (!match) throw new ToolOutputError(`${path}: malformed data URI`, { path });
  const [, type = "", params = "", payload = ""] = match;
  if (!params.split(";").includes("base64")) {
    throw new ToolOutputError(`${path}: a data URI image must be base64-encoded (";base64,")`, { path });
  }
  const uriType = type.toLowerCase();
  if (declared !== undefined && declared !== uriType) {
    throw new ToolOutputError(
      `${path}: declared as ${declared} but the data URI says ${uriType || "no type"}`,
      {
        path,
      },
    );
  }
  return fromBase64(payload, uriType, path);
}

function fromUrl(url: string, path: string): ImageContent {
  if (url.startsWith("data:")) return fromDataUri(url, path);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ToolOutputError(`${path}: ${JSON.stringify(url.slice(0, 80))} is not a URL`, { path });
  }
  if (parsed.protocol !== "https:" || /\s/.test(url)) {
    throw new ToolOutputError(`${path}: an image URL must use https, got ${parsed.protocol.slice(0, -1)}`, {
      path,
    });
  }
  return { type: "image", url };
}

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
  if (typeof image === "string") return fromUrl(image, path);
  if (image instanceof Uint8Array) return fromBytes(image, undefined, path);
  if (image instanceof ArrayBuffer) return fromBytes(new Uint8Array(image), undefined, path);
  if (typeof image === "object" && image !== null) {
    if ("url" in image && typeof image.url === "string") return fromUrl(image.url, path);
    if ("data" in image) {
      const { data, mimeType } = image;
      if (data instanceof Uint8Array) return fromBytes(data, mimeType, path);
      if (data instanceof ArrayBuffer) return fromBytes(new Uint8Array(data), mimeType, path);
      if (typeof data === "string") {
        return data.startsWith("data:")
          ? fromDataUri(data, path, mimeType)
          : fromBase64(data, mimeType, path);
      }
    }
  }
  throw new ToolOutputError(
    `${path}: an image must be an https URL, a data URI, or bytes (Uint8Array or ArrayBuffer)`,
    { path },
  );
}
