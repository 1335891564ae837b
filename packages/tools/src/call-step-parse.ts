import type { CallFinisher } from "./call-ending";
import type { CallState } from "./call-state";
import * as Sentences from "./model-sentences";
import type { CompiledTool } from "./tool-definition";
import type { Tools } from "./tools";
import type { ValidationResult } from "./validate-arguments";

/** What the parse step asks of the executor. */
export interface ParseHost extends CallFinisher {
  readonly tools: Tools;
}

/**
 * The first step, in two halves around the schema's own (possibly asynchronous) parse, which the
 * pipeline awaits itself so the step costs no promise of its own. First half: the call's
 * arguments were readable and it names a registered tool; returns the tool, or undefined when
 * the call ended here as `invalid_arguments` or `unknown_tool`.
 */
export function findTool(host: ParseHost, state: CallState): CompiledTool | undefined {
  const { call, tool } = state;
  if (call.argumentsError !== undefined) {
    host.finish(state, "invalid_arguments", {
      text: Sentences.unreadableArguments(call.name, call.argumentsError),
      code: "invalid_arguments",
      message: call.argumentsError,
    });
    return undefined;
  }
  if (!tool) {
    host.finish(state, "unknown_tool", {
      text: Sentences.unknownTool(call.name, host.tools.names()),
      code: "unknown_tool",
      message: `no tool named ${JSON.stringify(call.name)} is registered`,
    });
    return undefined;
  }
  return tool;
}

/**
 * Second half: the arguments fit the tool's schema (`parsed` is what the schema said); false
 * when the call ended here as `invalid_arguments`, one issue per line.
 */
export function acceptArguments(
  host: ParseHost,
  state: CallState,
  parsed: ValidationResult<unknown>,
): parsed is { ok: true; value: unknown } {
  if (parsed.ok) return true;
  host.finish(state, "invalid_arguments", {
    text: Sentences.invalidArguments(state.call.name, parsed.issues),
    code: "invalid_arguments",
    message: parsed.issues.join("\n"),
  });
  return false;
}
