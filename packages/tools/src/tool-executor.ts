import { approveStep } from "./call-step-approve";
import { ToolExecutorBase } from "./tool-executor-base";
import type { ToolExecutorOptions } from "./tool-executor-options";

/**
 * Runs tool calls for one session: checks arguments, asks for approval, enforces timeouts and
 * concurrency caps, relays progress, handles interrupts, and remembers results so a call
 * delivered again is not run twice. Emits `started`, `progress`, `say`, `held` and `finished`.
 *
 * @example
 * ```ts
 * const executor = new ToolExecutor({ tools, sessionId: "s_1", user: { id: "u_1" }, approvalGate });
 * executor.on("progress", ({ callId, text }) => relay(callId, text));
 * const result = await executor.execute({ id: "call_1", name: "book_flight", arguments: { flight_id: "LH400", seats: 2 } });
 * socket.send(JSON.stringify({ type: "tool.result", callId: result.callId, result: toToolResult(result) }));
 * ```
 */
export class ToolExecutor extends ToolExecutorBase {
  constructor(options: ToolExecutorOptions) {
    super(options, approveStep);
  }
}
