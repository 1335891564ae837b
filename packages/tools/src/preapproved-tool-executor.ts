import { ToolExecutorBase } from "./tool-executor-base";
import type { ToolExecutorOptions } from "./tool-executor-options";

/**
 * Options of a {@link PreapprovedToolExecutor}: those of a `ToolExecutor` without the approval.
 *
 * @example
 * ```ts
 * const options: PreapprovedToolExecutorOptions = { tools, sessionId: "s_1", user: { id: "u_1" } };
 * ```
 */
export type PreapprovedToolExecutorOptions = Omit<
  ToolExecutorOptions,
  "approvalGate" | "approvalExpiresInMs"
>;

/**
 * A {@link ToolExecutor} for calls whose approval was decided before they arrived: where the
 * server asked the user (a page's tools, a worker's hosted tools, the server's own), a call it
 * delivers is allowed, so a tool with `approval` runs like any other. Everything else is the
 * same: arguments, timeouts, caps, progress, holds, interrupts, idempotency. It carries no
 * approval code, which keeps a page's bundle small.
 *
 * @example
 * ```ts
 * const executor = new PreapprovedToolExecutor({ tools, sessionId: frame.sessionId, user: frame.user });
 * const result = await executor.execute(frame.call, { attempt: frame.attempt, timeoutMs: frame.timeoutMs });
 * ```
 */
export class PreapprovedToolExecutor extends ToolExecutorBase {
  constructor(options: PreapprovedToolExecutorOptions) {
    super(options, undefined);
  }
}
