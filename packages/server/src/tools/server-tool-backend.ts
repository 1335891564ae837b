import type { ConversationItem, JsonObject, ToolResult, ToolSpec, User } from "@patchbay/protocol";
import { type IdempotencyStore, PreapprovedToolExecutor, type Tools, toToolResult } from "@patchbay/tools";
import type { CancelReason, ToolCallHandlers } from "../extensions/dispatch-seams";
import type { Logger } from "../observability/logger";
import type { ArgumentCheck, RoutedToolCall, ToolBackend } from "./tool-backend";

/**
 * What a {@link ServerToolBackend} runs with: the server's `Tools` registry, the session, and the
 * ceiling of a call's timeout.
 */
export interface ServerToolBackendOptions {
  tools: Tools;
  sessionId: string;
  user: User;
  conversation: () => readonly ConversationItem[];
  idempotencyStore?: IdempotencyStore;
  /** The agent's `server_tool_timeout_ms`. */
  timeoutCeilingMs: number;
  /** Where a tool that threw is logged, at warn, with its stack, call id and session id. */
  logger?: Logger;
}

/**
 * The in-process tools (the `tools` registry passed to `createServer`), run through one
 * session's `ToolExecutor`. The tool-call runner decides what the executor would otherwise
 * decide a second time: arguments are parsed once (here, with the tool's own schema, through
 * `checkArguments`), the session's concurrency is capped once (by the runner; the executor keeps
 * only per-tool caps), the user was asked already (a `PreapprovedToolExecutor`), the timeout is
 * the runner's, and a hold is accepted only when the runner says so. A tool whose approval is
 * conditional has its `when` called here, in the server process, and a call it says yes to asks
 * the user through the runner (`handlers.approval`).
 */
export class ServerToolBackend implements ToolBackend {
  readonly location = "server" as const;
  readonly remote = false;
  private readonly handlers = new Map<string, ToolCallHandlers>();
  private readonly executor: PreapprovedToolExecutor;

  constructor(private readonly options: ServerToolBackendOptions) {
    this.executor = new PreapprovedToolExecutor({
      tools: options.tools,
      sessionId: options.sessionId,
      user: options.user,
      conversation: options.conversation,
      maxConcurrentCalls: null,
      confirmHold: ({ callId }) =>
        this.handlers.get(callId)?.hold() ?? { accepted: false, reason: "unknown_call" },
      confirmApproval: ({ callId, attempt }) =>
        this.handlers.get(callId)?.approval?.(attempt) ?? { outcome: "cancelled", reason: "unknown_call" },
      ...(options.idempotencyStore ? { idempotencyStore: options.idempotencyStore } : {}),
    });
    this.executor.on("progress", ({ callId, text }) => this.handlers.get(callId)?.progress(text));
    this.executor.on("say", ({ callId, text }) => this.handlers.get(callId)?.say(text));
    // This process ran the tool: its log gets the whole error; the model gets a sentence.
    this.executor.on("threw", ({ callId, name, sessionId, error, step }) =>
      options.logger?.warn(step === "when" ? `approval.when of tool ${name} threw` : `tool ${name} threw`, {
        tool: name,
        callId,
        sessionId,
        error,
      }),
    );
  }

  specs(): ToolSpec[] {
    return this.options.tools.list();
  }

  has(name: string): boolean {
    return this.options.tools.get(name) !== undefined;
  }

  timeoutCeilingMs(): number {
    return this.options.timeoutCeilingMs;
  }

  async checkArguments(spec: ToolSpec, args: JsonObject): Promise<ArgumentCheck> {
    return (
      (await this.executor.checkArguments(spec.name, args)) ?? {
        ok: false,
        issues: [`no tool named ${spec.name} is registered`],
      }
    );
  }

  async run(call: RoutedToolCall, handlers: ToolCallHandlers): Promise<ToolResult> {
    this.handlers.set(call.callId, handlers);
    try {
      const result = await this.executor.execute(
        { id: call.callId, name: call.spec.name, arguments: call.arguments },
        { timeoutMs: call.timeoutMs, ...(call.checked ? { checkedArguments: call.checked } : {}) },
      );
      return toToolResult(result);
    } finally {
      this.handlers.delete(call.callId);
    }
  }

  cancel(callId: string, reason: CancelReason): void {
    this.executor.cancel(callId, reason);
  }
}
