import type { ImageContent, ImageMimeType } from "@patchbay/protocol";
import type { ToolImage } from "./tool-output";

// The image checks of tool output, loaded when a result first has images: a chunk of its own in
// a page's bundle. It imports nothing a page loads at first (the caller gives the size limit
// and how to fail: see image-rules.ts), so that chunk shares no module with the page's first
// load and costs the page no extra chunk.

/** The size limit of one image and the error a wrong image throws (`what` says what is wrong). */
export interface ImageRules {
  maxBytes: number;
  fail(path: string, what: string): never;
}

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

function checkSize(bytes: number, path: string, rules: ImageRules): void {
  if (bytes > rules.maxBytes) {
    rules.fail(
      path,
      `image is ${megabytes(bytes)} (${bytes} bytes), more than the ${megabytes(rules.maxBytes)} limit`,
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

function fromBytes(
  bytes: Uint8Array,
  declared: ImageMimeType | undefined,
  path: string,
  rules: ImageRules,
): ImageContent {
  checkSize(bytes.byteLength, path, rules);
  const sniffed = sniffImageType(bytes);
  if (!sniffed) {
    rules.fail(path, `the bytes are not a PNG, JPEG, GIF or WebP image`);
  }
  if (declared !== undefined && declared !== sniffed) {
    rules.fail(path, `declared as ${declared} but the bytes are ${sniffed}`);
  }
  return { type: "image", mimeType: sniffed, data: bytesToBase64(bytes) };
}

function fromBase64(
  base64: string,
  declared: string | undefined,
  path: string,
  rules: ImageRules,
): ImageContent {
  if (base64.length % 4 !== 0 || !BASE64.test(base64)) {
    rules.fail(path, `image data is not valid base64`);
  }
  if (declared !== undefined && !(KNOWN_TYPES as readonly string[]).includes(declared)) {
    rules.fail(path, `image type ${JSON.stringify(declared)} is not one of ${KNOWN_TYPES.join(", ")}`);
  }
  checkSize(base64ByteLength(base64), path, rules);
  const sniffed = sniffImageType(base64Head(base64, 12));
  if (!sniffed) {
    rules.fail(path, `the data is not a PNG, JPEG, GIF or WebP image`);
  }
  if (declared !== undefined && declared !== sniffed) {
    rules.fail(path, `declared as ${declared} but the data is ${sniffed}`);
  }
  return { type: "image", mimeType: sniffed, data: base64 };
}

function fromDataUri(uri: string, path: string, rules: ImageRules, declared?: ImageMimeType): ImageContent {
  const match = DATA_URI.exec(uri);
  if (!match) return rules.fail(path, "malformed data URI");
  const [, type = "", params = "", payload = ""] = match;
  if (!params.split(";").includes("base64")) {
    rules.fail(path, `a data URI image must be base64-encoded (";base64,")`);
  }
  const uriType = type.toLowerCase();
  if (declared !== undefined && declared !== uriType) {
    rules.fail(path, `declared as ${declared} but the data URI says ${uriType || "no type"}`);
  }
  return fromBase64(payload, uriType, path, rules);
}

function fromUrl(url: string, path: string, rules: ImageRules): ImageContent {
  if (url.startsWith("data:")) return fromDataUri(url, path, rules);
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return rules.fail(path, `${JSON.stringify(url.slice(0, 80))} is not a URL`);
  }
  if (parsed.protocol !== "https:" || /\s/.test(url)) {
    rules.fail(path, `an image URL must use https, got ${parsed.protocol.slice(0, -1)}`);
  }
  return { type: "image", url };
}

/**
 * Checks one image a tool returned and turns it into the wire form: an https URL stays a URL;
 * bytes and data URIs become base64 data of a sniffed, known type. Anything else fails through
 * `rules` naming `path` and what was wrong (`toImageContent` is this with the protocol's rules).
 */
export function checkImage(image: ToolImage, path: string, rules: ImageRules): ImageContent {
  if (typeof image === "string") return fromUrl(image, path, rules);
  if (image instanceof Uint8Array) return fromBytes(image, undefined, path, rules);
  if (image instanceof ArrayBuffer) return fromBytes(new Uint8Array(image), undefined, path, rules);
  if (typeof image === "object" && image !== null) {
    if ("url" in image && typeof image.url === "string") return fromUrl(image.url, path, rules);
    if ("data" in image) {
      const { data, mimeType } = image;
      if (data instanceof Uint8Array) return fromBytes(data, mimeType, path, rules);
      if (data instanceof ArrayBuffer) return fromBytes(new Uint8Array(data), mimeType, path, rules);
      if (typeof data === "string") {
        return data.startsWith("data:")
          ? fromDataUri(data, path, rules, mimeType)
          : fromBase64(data, mimeType, path, rules);
      }
    }
  }
  return rules.fail(path, "an image must be an https URL, a data URI, or bytes (Uint8Array or ArrayBuffer)");
}
