import type { ToolResult, ToolSpec } from "@patchbay/protocol";
import type { CancelReason, HostedToolRouter, ToolCallHandlers } from "../extensions/dispatch-seams";
import type { SessionLog } from "../sessions/session-log";
import { forEndUsers } from "../turns/reasoning-state";
import type { RoutedToolCall, ToolBackend } from "./tool-backend";

/**
 * The tools dispatch workers host for the session's agent, reached through the
 * {@link HostedToolRouter} seam. It carries calls and cancels; the tool-call runner decides.
 */
export class WorkerToolBackend implements ToolBackend {
  readonly location = "worker" as const;
  readonly remote = true;

  constructor(
    private readonly runtime: SessionLog,
    private readonly router: HostedToolRouter,
  ) {}

  specs(): ToolSpec[] {
    return this.router.specs(this.runtime.agent.id);
  }

  has(name: string): boolean {
    return this.router.hasTool(this.runtime.agent.id, name);
  }

  /** The longest `toolTimeoutMs` a worker hosting the tool offered, else the agent's setting. */
  timeoutCeilingMs(spec: ToolSpec): number {
    return (
      this.router.timeoutCeilingMs?.(this.runtime.agent.id, spec.name) ??
      this.runtime.agent.hostedToolTimeoutMs
    );
  }

  run(call: RoutedToolCall, handlers: ToolCallHandlers): Promise<ToolResult> {
    return this.router.call(
      {
        callId: call.callId,
        agent: this.runtime.agent.id,
        sessionId: this.runtime.id,
        tool: call.spec.name,
        arguments: call.arguments,
        user: call.user,
        // The most recent items only: the frame goes out with every call, and a worker's tool
        // needs the context of the turn, not the session's whole history.
        conversation: this.runtime
          .recentConversation(this.runtime.agent.hostedCallConversationItems)
          .map(forEndUsers),
        timeoutMs: call.timeoutMs,
        ...(call.attempt === undefined ? {} : { attempt: call.attempt }),
      },
      handlers,
    );
  }

  cancel(callId: string, reason: CancelReason): void {
    this.router.cancel(callId, reason);
  }
}
