import type { ToolResult, ToolSpec } from "@patchbay/protocol";
import { type ToolExecutor, toToolResult } from "@patchbay/tools";
import type { HostedToolHandlers } from "./dispatch-seams";
import type { RoutedToolCall, ToolBackend } from "./tool-location";

/**
 * The in-process tools (the `tools` registry passed to `createServer`), run through one
 * session's `ToolExecutor`: its timeouts, concurrency caps, progress, hold and idempotency
 * rules apply exactly as in a page or a worker. The executor's approval gate is `allowAll`
 * because the turn loop asks the user before it routes a call anywhere.
 *
 * @example
 * ```ts
 * const executor = new ToolExecutor({ tools, sessionId, user, approvalGate: allowAll });
 * const backend = new ServerToolBackend(executor, () => tools.list());
 * ```
 */
export class ServerToolBackend implements ToolBackend {
  readonly location = "server" as const;
  private readonly handlers = new Map<string, HostedToolHandlers>();
  private readonly held = new Set<string>();
  private readonly names = new Map<string, string>();

  constructor(
    private readonly executor: ToolExecutor,
    private readonly toolSpecs: () => ToolSpec[],
  ) {
    executor.on("progress", ({ callId, text }) => this.handlers.get(callId)?.progress(text));
    executor.on("say", ({ callId, text }) => this.handlers.get(callId)?.say(text));
    executor.on("held", ({ callId }) => {
      this.held.add(callId);
      this.handlers.get(callId)?.hold();
    });
  }

  specs(): ToolSpec[] {
    return this.toolSpecs();
  }

  has(name: string): boolean {
    return this.toolSpecs().some((spec) => spec.name === name);
  }

  async run(call: RoutedToolCall, handlers: HostedToolHandlers): Promise<ToolResult> {
    this.handlers.set(call.callId, handlers);
    this.names.set(call.callId, call.spec.name);
    try {
      const result = await this.executor.execute({
        id: call.callId,
        name: call.spec.name,
        arguments: call.arguments,
      });
      return toToolResult(result);
    } finally {
      this.handlers.delete(call.callId);
      this.names.delete(call.callId);
      this.held.delete(call.callId);
    }
  }

  interrupt(callId: string): boolean {
    const name = this.names.get(callId);
    const spec = name === undefined ? undefined : this.toolSpecs().find((s) => s.name === name);
    if (!spec?.interruptible || this.held.has(callId)) return false;
    return this.executor.cancel(callId);
  }

  running(): string[] {
    return [...this.handlers.keys()];
  }
}
