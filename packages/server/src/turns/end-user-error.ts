import { randomBytes } from "node:crypto";
import type { WireError } from "@patchbay/protocol";

/**
 * A reference for one failure: shown to the end user, logged with the full error, so a support
 * request ("it said err_7hq2k9x4m1") leads the developer to the log line.
 */
export function newErrorReference(): string {
  return `err_${randomBytes(5).toString("hex")}`;
}

/**
 * What the end user sees of a failed turn: a neutral sentence by kind of failure and the
 * reference, never the provider's text (which can name keys, accounts or internals) nor text
 * meant for the model. The wire `code` stays, so programs can still switch on it.
 */
export function endUserError(code: string, ref: string): WireError {
  const sentence =
    code === "rate_limited"
      ? "The assistant is busy right now. Please try again in a moment."
      : code === "context_too_long"
        ? "This conversation has grown too long for the assistant. Please start a new one."
        : code === "authentication" || code === "unavailable"
          ? "The assistant is not available right now. Please try again later."
          : "The assistant could not answer this time. Please try again.";
  return { code, message: `${sentence} (reference ${ref})` };
}
