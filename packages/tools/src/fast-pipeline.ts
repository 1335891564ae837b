import { type PipelineHost, runPipeline } from "./call-pipeline";
import { acquireSlots } from "./call-slots";
import type { CallState } from "./call-state";
import { acceptArguments, findTool } from "./call-step-parse";
import { runStepFast } from "./run-step-fast";
import { armTimeoutBatched } from "./timeout-batch";
import type { CompiledTool } from "./tool-definition";
import type { ValidationResult } from "./validate-arguments";

/**
 * The call pipeline as the Node entry runs it (`useFastPaths`): the steps of
 * call-pipeline.ts in the same order, but a step that answered at once (a synchronous schema, a
 * free slot) is not awaited, so a call that needs no wait reaches `run` in the same microtask
 * instead of a few microtasks and promises later. A tool that asks for approval goes the plain
 * way: it waits for the user anyway. Returns a promise when a step had to wait or `run` was
 * started; it rejects only when something threw where nothing should (the executor then ends
 * the call as failed, as with the plain pipeline).
 */
export function runPipelineFast(host: PipelineHost, state: CallState): unknown {
  const tool = findTool(host, state);
  if (tool === undefined) return;
  if (tool.spec.approval) return runPipeline(host, state);
  // Arguments checked before (ExecuteOptions.checkedArguments) are not parsed again.
  const checked = state.checkedArguments;
  const parsed = checked
    ? { ok: true as const, value: checked.value }
    : tool.parameters.parse(state.call.arguments);
  return parsed instanceof Promise
    ? parsed.then((result) => afterParse(host, state, tool, result))
    : afterParse(host, state, tool, parsed);
}

function afterParse(
  host: PipelineHost,
  state: CallState,
  tool: CompiledTool,
  parsed: ValidationResult<unknown>,
) {
  if (state.settled || !acceptArguments(host, state, parsed)) return;
  const args = (parsed as { value: unknown }).value;
  armTimeoutBatched(
    host,
    state,
    state.explicitTimeoutMs || (tool.definition.timeoutMs ?? host.defaultTimeoutMs),
  );
  const slots = acquireSlots(state, tool, host.caps);
  return slots === true
    ? runStepFast(host, state, tool, args)
    : slots.then((held) => (held ? runStepFast(host, state, tool, args) : undefined));
}
