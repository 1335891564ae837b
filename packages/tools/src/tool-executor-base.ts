import { EventEmitter } from "@patchbay/protocol/runtime";
import type { ApproveStep } from "./call-pipeline";
import { CallRunner } from "./call-runner";
import type { ToolCallInput } from "./tool-call-input";
import type { ToolExecutionResult } from "./tool-execution-result";
import type {
  CancelReason,
  ExecuteOptions,
  ToolExecutorEvents,
  ToolExecutorOptions,
} from "./tool-executor-options";
import { compiledToolOf } from "./tools";

/**
 * The public face both executors share ({@link ToolExecutor}, and `PreapprovedToolExecutor` for
 * calls whose approval was asked before they arrived); the runner behind it does the work.
 */
export class ToolExecutorBase extends EventEmitter<ToolExecutorEvents> {
  declare readonly sessionId: string;
  readonly #runner: CallRunner;

  /** `approve`: the approval step, or undefined where the approval was decided upstream. */
  protected constructor(options: ToolExecutorOptions, approve: ApproveStep | undefined) {
    super();
    this.#runner = new CallRunner(options, this, approve);
    this.sessionId = this.#runner.sessionId;
  }

  /** The ids of the calls in progress (awaiting approval, waiting for a slot, or running). */
  get activeCallIds(): string[] {
    return this.#runner.activeCallIds;
  }

  /**
   * Runs a call and resolves with how it ended; it never rejects for anything the tool or the
   * model did (only for a call without an id or a name). A call whose id is in progress joins
   * it; a call whose id already finished gets the stored result without running again.
   */
  execute(input: ToolCallInput, options?: ExecuteOptions): Promise<ToolExecutionResult> {
    return this.#runner.execute(input, options);
  }

  /**
   * Cancels every call in progress that the interrupt rule lets an interrupt cancel (its tool is
   * `interruptible` and it is not held; see `interruptCancels`). Their signals abort and they end
   * as `cancelled`. Returns the ids cancelled.
   */
  interrupt(): string[] {
    return this.#runner.interrupt();
  }

  /**
   * Cancels one call for a {@link CancelReason}. `timed_out` ends it as `timed_out` and aborts its
   * held signal too. `interrupted` and `session_closed` leave a held call running (it goes on to
   * its result). `cancelled`, the default, ends any call as `cancelled` (with `held` telling
   * whether a change may have started), leaving a held signal alone. A call waiting for its hold
   * to be confirmed is not held yet: it is cancelled. Returns whether the call was stopped.
   */
  cancel(callId: string, reason: CancelReason = "cancelled"): boolean {
    return this.#runner.cancel(callId, reason);
  }

  /**
   * Whether a call is in progress here and held (its hold was confirmed). A call that finished
   * is not.
   */
  isHeld(callId: string): boolean {
    return this.#runner.isHeld(callId);
  }

  /**
   * Parses arguments with the tool's own schema, as `execute` would: the parsed value, or the
   * issues (one per line). Pass the value as `checkedArguments` so the call is not parsed twice.
   * Resolves `undefined` for a tool this executor does not have.
   */
  async checkArguments(
    name: string,
    args: Record<string, unknown>,
  ): Promise<{ ok: true; value: unknown } | { ok: false; issues: string[] } | undefined> {
    const tool = compiledToolOf(this.#runner.tools, name);
    if (!tool) return undefined;
    return tool.parameters.parse(args);
  }
}
