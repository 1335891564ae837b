// `@patchbay/protocol/lite`: what a browser page needs of the protocol at run time, without zod.
// Types come from the main entry (`import type`), which costs nothing at run time.
export type { DecodeResult } from "./decode-frame";
export { encodeResultFrame, resultTooLarge } from "./encode-result-frame";
export { ErrorCodes, FrameDecodeError, ProtocolError, ToolCallFormatError } from "./errors";
export { parseToolArguments } from "./normalize-tool-calls";
export { isResponseEnd } from "./response-end";
export type { DecodeServerFrameOptions } from "./server-frame-guards";
export { checkToolApprovalSpec, decodeServerFrame, SERVER_FRAME_TYPES } from "./server-frame-guards";
export { failedResult, isTerminalToolCallStatus, TERMINAL_TOOL_CALL_STATUSES } from "./tool-results";
export { USER_TOKEN_AUDIENCE } from "./user-token-audience";
export { DEFAULT_MAX_FRAME_BYTES, MAX_IMAGE_BYTES, PROTOCOL_VERSION } from "./version";
