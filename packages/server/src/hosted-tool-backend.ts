import type { ToolResult, ToolSpec } from "@patchbay/protocol";
import type { HostedToolHandlers, HostedToolRouter } from "./dispatch-seams";
import type { SessionRuntime } from "./session-runtime";
import type { RoutedToolCall, ToolBackend } from "./tool-location";

/**
 * The tools dispatch workers host for the session's agent, reached through the
 * {@link HostedToolRouter} seam. It remembers which running calls may be interrupted (the tool is
 * interruptible and the call has not held) so an interrupt cancels only those.
 *
 * @example
 * ```ts
 * const hosted = new HostedToolBackend(runtime, router);
 * hosted.has("lookup_order");
 * ```
 */
export class HostedToolBackend implements ToolBackend {
  readonly location = "worker" as const;
  private readonly calls = new Map<string, { interruptible: boolean; held: boolean }>();

  constructor(
    private readonly runtime: SessionRuntime,
    private readonly router: HostedToolRouter,
  ) {}

  specs(): ToolSpec[] {
    return this.router.specs(this.runtime.agent.id);
  }

  has(name: string): boolean {
    return this.router.hasTool(this.runtime.agent.id, name);
  }

  async run(call: RoutedToolCall, handlers: HostedToolHandlers): Promise<ToolResult> {
    const state = { interruptible: call.spec.interruptible ?? false, held: false };
    this.calls.set(call.callId, state);
    try {
      return await this.router.call(
        {
          callId: call.callId,
          agent: this.runtime.agent.id,
          sessionId: this.runtime.id,
          tool: call.spec.name,
          arguments: call.arguments,
          user: call.user,
          // The most recent items only: the frame goes out with every call, and a worker's tool
          // needs the context of the turn, not the session's whole history.
          conversation: this.runtime.recentConversation(this.runtime.agent.hostedCallConversationItems),
          defaultTimeoutMs: call.spec.timeoutMs ?? this.runtime.agent.hostedToolTimeoutMs,
          interruptible: state.interruptible,
        },
        {
          ...handlers,
          hold: () => {
            state.held = true;
            handlers.hold();
          },
        },
      );
    } finally {
      this.calls.delete(call.callId);
    }
  }

  interrupt(callId: string): boolean {
    const state = this.calls.get(callId);
    if (!state?.interruptible || state.held) return false;
    this.router.cancel(callId, "interrupted");
    return true;
  }

  running(): string[] {
    return [...this.calls.keys()];
  }

  /** Cancels every running call (the session closed). */
  cancelAll(): void {
    for (const callId of this.calls.keys()) this.router.cancel(callId, "session_closed");
  }
}
