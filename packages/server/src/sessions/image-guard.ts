import { isIP } from "node:net";
import type { ImageContent } from "@patchbay/protocol";
import { ServerError } from "../errors";

// The first bytes of each image type a message may carry inline.
const SIGNATURES: Record<string, (bytes: Buffer) => boolean> = {
  "image/png": (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])),
  "image/jpeg": (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff,
  "image/gif": (b) =>
    b.subarray(0, 6).toString("latin1") === "GIF87a" || b.subarray(0, 6).toString("latin1") === "GIF89a",
  "image/webp": (b) =>
    b.subarray(0, 4).toString("latin1") === "RIFF" && b.subarray(8, 12).toString("latin1") === "WEBP",
};

/**
 * Checks the images of a message before they are stored or passed to a model: inline data must
 * start with the signature of its declared type (a shell script labelled `image/png` is refused),
 * and a URL must not name a private, loopback or link-local address (169.254.169.254, 10.x,
 * localhost, ...) unless `allowPrivateUrls`. A refusal is `unsupported_content` with the path.
 */
export function checkImages(
  images: readonly ImageContent[] | undefined,
  allowPrivateUrls: boolean,
  base = "images",
) {
  for (const [index, image] of (images ?? []).entries()) {
    const path = `${base}.${index}`;
    if ("data" in image && typeof image.data === "string") {
      const head = Buffer.from(image.data.slice(0, 24), "base64");
      const matches = SIGNATURES[image.mimeType];
      if (!matches?.(head)) {
        throw new ServerError(
          "unsupported_content",
          `${path}.data: the bytes are not ${image.mimeType} (their signature does not match the declared type)`,
          { path: `${path}.data` },
        );
      }
    } else if ("url" in image && typeof image.url === "string" && !allowPrivateUrls) {
      const host = hostOf(image.url);
      if (host === undefined || isPrivateHost(host)) {
        throw new ServerError(
          "unsupported_content",
          `${path}.url: image URLs may not point at private, loopback or link-local addresses`,
          { path: `${path}.url` },
        );
      }
    }
  }
}

function hostOf(url: string): string | undefined {
  try {
    return new URL(url).hostname.replace(/^\[|\]$/g, "").toLowerCase();
  } catch {
    return undefined;
  }
}

/** Whether a host name or address literal names this machine or a private network. */
export function isPrivateHost(host: string): boolean {
  if (
    host === "localhost" ||
    host.endsWith(".localhost") ||
    host.endsWith(".local") ||
    host.endsWith(".internal")
  ) {
    return true;
  }
  const kind = isIP(host);
  if (kind === 4) return isPrivateV4(host);
  if (kind === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(host)?.[1];
    if (mapped) return isPrivateV4(mapped);
    if (/^::ffff:[0-9a-f]{1,4}:[0-9a-f]{1,4}$/.test(host)) return true; // mapped, hex form
    return (
      host === "::1" ||
      host === "::" ||
      /^f[cd][0-9a-f]{2}:/.test(host) || // unique local fc00::/7
      /^fe[89ab][0-9a-f]:/.test(host) // link-local fe80::/10
    );
  }
  // A bare number (http://2852039166/) is an IPv4 address too.
  return /^(0x[0-9a-f]+|\d+)$/.test(host);
}

function isPrivateV4(address: string): boolean {
  const [a = 0, b = 0] = address.split(".").map(Number);
  return (
    a === 0 ||
    a === 10 ||
    a === 127 ||
    (a === 169 && b === 254) ||
    (a === 172 && b >= 16 && b <= 31) ||
    (a === 192 && b === 168) ||
    (a === 100 && b >= 64 && b <= 127)
  );
}
