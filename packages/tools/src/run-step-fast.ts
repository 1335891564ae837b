import type { CallState } from "./call-state";
import { callToolRun, endRun, type RunHost, runThrew, startRun } from "./call-step-run";
import type { CompiledTool } from "./tool-definition";

/**
 * The run step as the Node entry's pipeline runs it (fast-pipeline.ts): call-step-run.ts's
 * `runStep` without its async frame, which stayed alive (with its promise) for the whole call:
 * what `run` returned is taken as `await` takes it (`Promise.resolve`, so a promise, a thenable
 * and a plain value end the call in the same promise job as before) and ended by the same
 * `endRun`. Returns a promise that rejects only when something threw where nothing should.
 */
export function runStepFast(host: RunHost, state: CallState, tool: CompiledTool, args: unknown): unknown {
  startRun(host, state, tool);
  let value: unknown;
  try {
    value = callToolRun(host, state, tool.definition, args);
  } catch (error) {
    runThrew(host, state, error);
    return;
  }
  return Promise.resolve(value).then(
    (output) => endRun(host, state, output),
    (error: unknown) => runThrew(host, state, error),
  );
}
