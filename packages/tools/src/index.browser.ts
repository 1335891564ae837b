// The browser entry (the "browser" export condition): the same names as index.ts, without the
// zod 3 / zod/mini fallback, so a page loads neither zod-to-json-schema nor a copy of zod. zod 4
// schemas are read through their own methods; JSON Schema by @cfworker/json-schema, imported
// when the first JSON Schema tool is registered. So `validateArguments` itself, synchronous, is
// the one name only the Node entry exports, with `setPatternEngine` (a server puts RE2 behind
// schema patterns; a page has no use for it, and it would load the JSON Schema validator early).
// Nor does it export the image checks (`toImageContent`, `sniffImageType`, `toToolOutputContent`):
// the executor loads them when a tool first returns images, so a page without such a tool never
// does.

export { RecentMap } from "@patchbay/protocol/runtime";
export type { ApprovalDecision, ApprovalGate } from "./approval-gate";
export { allowAll } from "./approval-gate";
export type { ApprovalRequestInput } from "./approval-request";
export { buildApprovalRequest } from "./approval-request";
export type { DispatchResult, DispatchResultEntry } from "./dispatch-result";
export type { DispatchHandler, DispatchToolCallsOptions, ToolCallMeta } from "./dispatch-tool-calls";
export { dispatchToolCalls } from "./dispatch-tool-calls";
export { MAX_ERROR_TEXT, redactErrorText, secretValues } from "./error-text";
export {
  CallNotHeld,
  ToolDefinitionError,
  ToolDispatchError,
  ToolError,
  ToolOutputError,
  ToolsError,
  ToolsOptionError,
} from "./errors";
export { fillTemplate } from "./fill-template";
export { canonicalJson, hashArguments } from "./hash-arguments";
export type { IdempotencyStore } from "./idempotency-store";
export { InMemoryIdempotencyStore } from "./idempotency-store";
export { interruptCancels } from "./interrupt-rule";
export type { WithdrawReason } from "./model-sentences";
// One sentence alone as well: a page that says it keeps only it, not every sentence.
export { ModelSentences, pageReloadedWhileRunning } from "./model-sentences";
export type { PreapprovedToolExecutorOptions } from "./preapproved-tool-executor";
export { PreapprovedToolExecutor } from "./preapproved-tool-executor";
export type { ToolInputMapping } from "./project-tool-input";
export { projectToolInput } from "./project-tool-input";
export type { ToolCallInput } from "./tool-call-input";
export type { ToolApproval, ToolApprovalContext, ToolCallContext, ToolDefinition } from "./tool-definition";
export { toolSpecOf } from "./tool-definition";
export type { ToolExecutionResult } from "./tool-execution-result";
export { toToolResult } from "./tool-execution-result";
export { ToolExecutor } from "./tool-executor";
export type {
  CancelReason,
  ConditionalApprovalAnswer,
  ConditionalApprovalRequest,
  ExecuteOptions,
  HoldDecision,
  HoldRequest,
  ToolExecutorEvents,
  ToolExecutorOptions,
} from "./tool-executor-options";
export { ToolLimiter } from "./tool-limiter";
export type { ToolImage } from "./tool-output";
export { ToolOutput } from "./tool-output";
export type { ToolParameters, TypedSchema } from "./tool-parameters";
export { isZod3Schema, isZod4Schema } from "./tool-parameters";
export { Tools } from "./tools";
export type { ValidationResult } from "./validate-arguments";
