// What a scenario is, and the helpers scenarios share to read a session.
import type { Session } from "@patchbay/client";
import { isTerminalToolCallStatus, type ToolCallItem } from "@patchbay/protocol";
import type { KitWorld } from "./kit-server";
import { waitFor } from "./worker-proxy";

/** One test of the spec, run against a fresh server and fresh worker processes. */
export interface Scenario {
  name: string;
  /** The server's heartbeat interval for this scenario, when not HEARTBEAT_MS. */
  heartbeatMs?: number;
  /** Throws (an assertion) when the worker does not behave as the spec says. */
  run(world: KitWorld): Promise<void>;
}

/** The session's call of `tool` once it has ended (its result is in). */
export function endedCall(session: Session, tool: string, timeoutMs = 10_000): Promise<ToolCallItem> {
  return waitFor(
    () =>
      session.conversation.find(
        (item): item is ToolCallItem =>
          item.type === "tool_call" && item.name === tool && isTerminalToolCallStatus(item.status),
      ),
    (wake) => session.once("toolCall", wake),
    timeoutMs,
    () =>
      `the call of ${tool} did not end within ${timeoutMs} ms; conversation: ${JSON.stringify(
        session.conversation.filter((i) => i.type === "tool_call"),
      ).slice(0, 600)}`,
  );
}

/** The session's call of `tool` as soon as it exists (running or ended). */
export function startedCall(session: Session, tool: string, timeoutMs = 10_000): Promise<ToolCallItem> {
  return waitFor(
    () =>
      session.conversation.find(
        (item): item is ToolCallItem => item.type === "tool_call" && item.name === tool,
      ),
    (wake) => session.once("toolCall", wake),
    timeoutMs,
    () => `the model's call of ${tool} did not appear within ${timeoutMs} ms`,
  );
}

/** Sends a user message without waiting for the reply (errors surface through the checks). */
export function say(session: Session, text: string): void {
  void Promise.resolve(session.responses.create(text)).catch(() => undefined);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A hosted.call frame the kit injects, for a call the real server would never make. */
export function injectedCall(callId: string, tool: string, args: Record<string, unknown>) {
  return {
    type: "hosted.call",
    callId,
    attempt: 1,
    agent: "conformance",
    sessionId: "s_conformance_injected",
    tool,
    arguments: args,
    user: { id: "u_conformance" },
    conversation: [],
    timeoutMs: 10_000,
  };
}
