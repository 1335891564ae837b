/**
 * The version of the Patchbay wire protocol this package speaks.
 *
 * The rule for changes: within one major version a peer may add optional fields and new frame
 * types; a receiver ignores fields it does not know and answers an unknown frame type with an
 * `error` frame (code `unknown_frame_type`) without closing the socket. Renaming or removing a
 * field, making an optional field required, or changing a field's meaning bumps this number.
 * Peers exchange it in `hello`/`worker.hello`; a server refuses a version it does not speak with
 * an `error` frame (code `protocol_version`) and closes.
 *
 * @example
 * ```ts
 * socket.send(JSON.stringify({ type: "hello", protocol: PROTOCOL_VERSION, auth: { kind: "user", token } }));
 * ```
 */
export const PROTOCOL_VERSION = 1 as const;

/**
 * Frames larger than this (in UTF-8 bytes) are refused before they are parsed.
 *
 * @example
 * ```ts
 * decodeFrame(text, { maxBytes: DEFAULT_MAX_FRAME_BYTES });
 * ```
 */
export const DEFAULT_MAX_FRAME_BYTES = 5 * 1024 * 1024;

/**
 * The largest image a tool result or a message may carry, in bytes of image data.
 *
 * @example
 * ```ts
 * if (bytes.byteLength > MAX_IMAGE_BYTES) throw new Error("image too large");
 * ```
 */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
