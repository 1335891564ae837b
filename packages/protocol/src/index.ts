export type { ClientToServerFrame, ServerToClientFrame, SessionEvent, Usage } from "./client-frames";
export {
  ApprovalAckOutcomeSchema,
  ApprovalDecideFrameSchema,
  ApprovalRequestedEventSchema,
  ApprovalResolvedEventSchema,
  ClientHelloFrameSchema,
  ClientToolApprovalFrameSchema,
  ClientToolHoldFrameSchema,
  ClientToolProgressFrameSchema,
  ClientToolResultFrameSchema,
  ClientToolSayFrameSchema,
  ClientToServerFrameSchema,
  ConversationUpdatedEventSchema,
  ErrorFrameSchema,
  InterruptFrameSchema,
  MessageCompletedEventSchema,
  MessageCreatedEventSchema,
  MessageSendFrameSchema,
  PingFrameSchema,
  PongFrameSchema,
  ResponseCompletedEventSchema,
  ResponseFailedEventSchema,
  ResponseStartedEventSchema,
  ResponseThinkingEventSchema,
  SESSION_EVENT_TYPES,
  ServerToClientFrameSchema,
  SessionCloseFrameSchema,
  SessionCreateFrameSchema,
  SessionEventSchema,
  SessionOpenedFrameSchema,
  SessionResumeFrameSchema,
  TextDeltaEventSchema,
  ToolApprovalAckFrameSchema,
  ToolCallEventSchema,
  ToolCancelEventSchema,
  ToolHeldEventSchema,
  ToolHoldAckFrameSchema,
  ToolProgressEventSchema,
  ToolSayEventSchema,
  ToolsUpdateFrameSchema,
  UsageSchema,
  WelcomeFrameSchema,
} from "./client-frames";
export type { ImageContent, ImageMimeType, ToolOutputContent } from "./content";
export {
  ImageContentSchema,
  ImageDataSchema,
  ImageMimeTypeSchema,
  ImageUrlSchema,
  ToolOutputContentSchema,
} from "./content";
export type {
  ApprovalOutcome,
  ApprovalRequest,
  ConversationItem,
  MessageItem,
  SessionInfo,
  ToolCallItem,
  ToolCallStatus,
  ToolLocation,
} from "./conversation";
export {
  ApprovalOutcomeSchema,
  ApprovalRequestSchema,
  ConversationItemSchema,
  MessageItemSchema,
  SessionInfoSchema,
  TimestampSchema,
  ToolCallItemSchema,
  ToolCallStatusSchema,
  ToolLocationSchema,
} from "./conversation";
export type { DecodeFrameOptions, DecodeResult, FrameChannel, FrameOf } from "./decode-frame";
export {
  DEFAULT_MAX_JSON_DEPTH,
  decodeFrame,
  frameSchema,
  knownTypes,
  RESULT_FRAME_TYPES,
} from "./decode-frame";
export { encodeResultFrame, resultTooLarge } from "./encode-result-frame";
export type { ErrorCode } from "./errors";
export { ErrorCodes, FrameDecodeError, ProtocolError, ToolCallFormatError } from "./errors";
export { flattenZodIssues, formatZodIssues, issuePath } from "./format-issues";
export type { JsonSchemaDocument } from "./json-schema";
export { frameJsonSchema, JSON_SCHEMA_DIALECT, toWireJsonSchema } from "./json-schema";
export type { ToolCallFormat } from "./normalize-tool-calls";
export {
  detectToolCallFormat,
  normalizeToolCall,
  normalizeToolCalls,
  parseToolArguments,
} from "./normalize-tool-calls";
export type { JsonObject, User, WireError } from "./primitives";
export { IdSchema, JsonObjectSchema, SeqSchema, UserSchema, WireErrorSchema } from "./primitives";
export type { ResponseEndEvent } from "./response-end";
export { isResponseEnd } from "./response-end";
export type { DecodeServerFrameOptions } from "./server-frame-guards";
export { checkToolApprovalSpec, decodeServerFrame, SERVER_FRAME_TYPES } from "./server-frame-guards";
export type { NormalizedToolCall, ToolOutcome, ToolResult } from "./tool-call";
export { NormalizedToolCallSchema, ToolOutcomeSchema, ToolResultSchema } from "./tool-call";
export { failedResult, isTerminalToolCallStatus, TERMINAL_TOOL_CALL_STATUSES } from "./tool-results";
export type { JsonSchemaObject, ToolApprovalSpec, ToolSpec } from "./tool-spec";
export {
  JsonSchemaObjectSchema,
  ToolApprovalSpecSchema,
  ToolNameSchema,
  ToolSpecSchema,
} from "./tool-spec";
export { USER_TOKEN_AUDIENCE } from "./user-token-audience";
export {
  DEFAULT_MAX_FRAME_BYTES,
  DEFAULT_MAX_RESULT_FRAME_BYTES,
  DEFAULT_WORKER_RECEIVE_BYTES,
  MAX_CACHED_CONVERSATION_BYTES,
  MAX_CACHED_CONVERSATIONS,
  MAX_IMAGE_BYTES,
  MIN_WORKER_RECEIVE_BYTES,
  PROTOCOL_VERSION,
} from "./version";
export type {
  HoldRefusalReason,
  HostedAgent,
  InboundCall,
  InboundMessage,
  ServerToWorkerFrame,
  WorkerToServerFrame,
} from "./worker-frames";
export {
  AnswerFrameSchema,
  HOLD_REFUSAL_REASONS,
  HostedAgentSchema,
  HostedApprovalAckFrameSchema,
  HostedApprovalFrameSchema,
  HostedCallFrameSchema,
  HostedCancelFrameSchema,
  HostedHoldAckFrameSchema,
  HostedHoldFrameSchema,
  HostedProgressFrameSchema,
  HostedResultFrameSchema,
  HostedSayFrameSchema,
  InboundCallSchema,
  InboundMessageSchema,
  LoadFrameSchema,
  ServerToWorkerFrameSchema,
  WorkAcceptedFrameSchema,
  WorkDoneFrameSchema,
  WorkerHelloFrameSchema,
  WorkerHostsFrameSchema,
  WorkerReadyFrameSchema,
  WorkerToServerFrameSchema,
  WorkOfferedFrameSchema,
} from "./worker-frames";
