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
 * The size limit of a result frame (`tool.result`, `hosted.result`), in UTF-8 bytes: room for
 * one image of {@link MAX_IMAGE_BYTES} as base64 (6 990 508 bytes) plus 1 MiB for the rest.
 * Every other frame a peer sends keeps {@link DEFAULT_MAX_FRAME_BYTES}.
 *
 * @example
 * ```ts
 * decodeFrame(text, { channel: "worker-to-server", maxResultBytes: DEFAULT_MAX_RESULT_FRAME_BYTES });
 * ```
 */
export const DEFAULT_MAX_RESULT_FRAME_BYTES = 8 * 1024 * 1024;

/**
 * The largest frame the server sends a worker whose `worker.hello` does not say its own
 * `maxFrameBytes`: 1 MiB, what Python's `websockets` accepts by default.
 *
 * @example
 * ```ts
 * const limit = hello.maxFrameBytes ?? DEFAULT_WORKER_RECEIVE_BYTES;
 * ```
 */
export const DEFAULT_WORKER_RECEIVE_BYTES = 1024 * 1024;

/**
 * The smallest `worker.hello.maxFrameBytes` a worker may declare (64 KiB).
 *
 * @example
 * ```ts
 * Math.max(MIN_WORKER_RECEIVE_BYTES, declared);
 * ```
 */
export const MIN_WORKER_RECEIVE_BYTES = 64 * 1024;

/**
 * The most sessions a worker may ask the server to let it keep conversations for
 * (`worker.hello.conversationCache.sessions`).
 *
 * @example
 * ```ts
 * const sessions = Math.min(wanted, MAX_CACHED_CONVERSATIONS);
 * ```
 */
export const MAX_CACHED_CONVERSATIONS = 100_000;

/**
 * The most bytes of conversation items a worker may ask to keep (`worker.hello.conversationCache.bytes`): 1 GiB.
 *
 * @example
 * ```ts
 * const bytes = Math.min(wanted, MAX_CACHED_CONVERSATION_BYTES);
 * ```
 */
export const MAX_CACHED_CONVERSATION_BYTES = 1024 * 1024 * 1024;

/**
 * The largest image a tool result or a message may carry, in bytes of image data.
 *
 * @example
 * ```ts
 * if (bytes.byteLength > MAX_IMAGE_BYTES) throw new Error("image too large");
 * ```
 */
export const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
