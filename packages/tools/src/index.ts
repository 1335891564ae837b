// The Node entry: everything, with every zod schema compiled by zod-fallback.ts (zod 3 and zod/mini
// too, zod 4 checked without a promise where zod can), JSON Schema parameters checked at
// registration (the flat ones by validate-arguments-fast.ts), `run` handed only the arguments it
// can see and the light stand-in signal of `lightSignal` tools (run-call-fast.ts), and the
// executor's fast paths for a server's call rates (`useFastPaths`).
// The browser entry (index.browser.ts) exports the same names without them.

import { useFastPaths } from "./call-runner";
import { useRunCall } from "./call-step-run";
import { runPipelineFast } from "./fast-pipeline";
import { toObjectArgumentsCall } from "./object-arguments-call";
import { runCallFast } from "./run-call-fast";
import { useJsonSchemaValidator, useZodFallback } from "./tool-parameters";
import { validateArgumentsFast } from "./validate-arguments-fast";
import { compileZodFallback } from "./zod-fallback";

useZodFallback(compileZodFallback);
useJsonSchemaValidator(validateArgumentsFast);
useRunCall(runCallFast);
useFastPaths(toObjectArgumentsCall, runPipelineFast);

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
export { sniffImageType } from "./image-content";
export { interruptCancels } from "./interrupt-rule";
export type { WithdrawReason } from "./model-sentences";
// One sentence alone as well: a page that says it keeps only it, not every sentence.
export { ModelSentences, pageReloadedWhileRunning } from "./model-sentences";
export type { PatternEngine } from "./pattern-engine";
export { setPatternEngine } from "./pattern-engine";
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
export { toImageContent, toToolOutputContent } from "./tool-output-content";
export type { ToolParameters, TypedSchema } from "./tool-parameters";
export { isZod3Schema, isZod4Schema } from "./tool-parameters";
export { Tools } from "./tools";
export type { ValidationResult } from "./validate-arguments";
// `validateArguments` takes the quick way for flat schemas, with the full validator's results.
export { validateArgumentsFast as validateArguments } from "./validate-arguments-fast";
