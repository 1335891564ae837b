import { MAX_IMAGE_BYTES } from "@patchbay/protocol/lite";
import { ToolOutputError } from "./errors";
import type { ImageRules } from "./image-content";

/** The rules of a tool's images: the protocol's size limit, and a `ToolOutputError` naming the path. */
export const IMAGE_RULES: ImageRules = {
  maxBytes: MAX_IMAGE_BYTES,
  fail(path, what) {
    throw new ToolOutputError(`${path}: ${what}`, { path });
  },
};
