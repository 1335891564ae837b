import {
  type ApprovalRequest,
  isResponseEnd,
  type ResponseEndEvent,
  type SessionEvent,
  type ToolCallItem,
} from "@patchbay/protocol";
import { nanoid } from "nanoid";
import { ServerError } from "./errors";
import type { SessionDirectory } from "./sessions/session-directory";

/**
 * Options of `server.reply`.
 *
 * @example
 * ```ts
 * await server.reply("support", "Refund order A1", { onApproval: (request) => request.tool === "refund_order" });
 * ```
 */
export interface ReplyOptions {
  /** Continue this session (from an earlier `reply`, or one a client opened) instead of a new one. */
  sessionId?: string;
  /** Whom a new session is for. Default `"local"`. */
  userId?: string;
  /**
   * Answers a question for approval (a tool with `approval`): `true` allows the call. Default:
   * every question is declined, and the model reads that nobody could be asked.
   */
  onApproval?: (request: ApprovalRequest) => boolean | Promise<boolean>;
  /** Aborting it interrupts the reply, which then resolves with `reason: "interrupted"`. */
  signal?: AbortSignal;
}

/**
 * One reply of an agent, as `server.reply` resolves it.
 *
 * @example
 * ```ts
 * const { text, toolCalls } = await server.reply("support", "Where is my order A1?");
 * ```
 */
export interface ServerReply {
  /** The agent's final text (what it said after its tool calls). */
  text: string;
  /** Why the reply ended: `stop`, or early: `max_rounds`, `interrupted`, `answered_by_worker`, `refusal`. */
  reason: Extract<SessionEvent, { type: "response.completed" }>["reason"];
  /** The session it ran in: pass it as `sessionId` to continue the conversation. */
  sessionId: string;
  responseId: string;
  /** The tool calls of this reply, ended (`status`, `result`), in the order the model made them. */
  toolCalls: ToolCallItem[];
}

const BACKEND = { kind: "backend" } as const;
/** What the model reads when nobody could answer its question. */
const NOBODY_ASKED =
  "nobody could be asked: server.reply declines approvals unless its onApproval allows them";

/**
 * `server.reply`: sends the message as the backend (API key) would, through the session's real
 * turn loop, and waits for that turn's end. Questions for approval go to `onApproval` (declined
 * without it); a failed turn rejects with a `ServerError` carrying the turn's error code.
 */
export async function replyOnce(
  sessions: SessionDirectory,
  agent: string,
  message: string,
  options: ReplyOptions = {},
): Promise<ServerReply> {
  if (typeof message !== "string" || message.trim() === "") {
    throw new ServerError("invalid_request", "reply: message must be a non-empty string", {
      path: "message",
    });
  }
  sessions.agent(agent);
  const sessionId =
    options.sessionId ?? (await sessions.create(BACKEND, agent, { userId: options.userId ?? "local" })).id;
  const { live, release } = await sessions.acquire(BACKEND, sessionId);
  if (live.runtime.agent.id !== agent) {
    release();
    throw new ServerError(
      "invalid_request",
      `reply: session ${sessionId} belongs to agent '${live.runtime.agent.id}', not '${agent}'`,
      {
        path: "sessionId",
      },
    );
  }
  const commandId = `reply_${nanoid(12)}`;
  let approvalError: unknown;
  let unsubscribe = () => {};
  const onAbort = () => void live.interrupt(`${commandId}_interrupt`).catch(() => undefined);
  try {
    const ended = new Promise<ResponseEndEvent | "closed">((resolve) => {
      unsubscribe = live.runtime.subscribe((event) => {
        if (isResponseEnd(event) && event.commandId === commandId) {
          resolve(event);
        } else if (event.type === "approval.requested") {
          void answer(event.approval);
        }
      });
      live.runtime.once("closed", () => resolve("closed"));
    });
    const answer = async (request: ApprovalRequest) => {
      let allowed = false;
      try {
        allowed = options.onApproval ? (await options.onApproval(request)) === true : false;
      } catch (error) {
        approvalError ??= error;
      }
      try {
        live.approvals.decide(request.id, allowed, allowed || options.onApproval ? undefined : NOBODY_ASKED);
      } catch {
        // Answered, expired or withdrawn meanwhile: nothing to decide.
      }
    };
    options.signal?.addEventListener("abort", onAbort, { once: true });
    await live.sendMessage({ commandId, text: message, sender: "backend" });
    if (options.signal?.aborted) onAbort();
    const ending = await ended;
    if (approvalError !== undefined) throw approvalError;
    if (ending === "closed") {
      throw new ServerError("unavailable", `reply: session ${sessionId} closed before the reply ended`);
    }
    if (ending.type === "response.failed") {
      throw new ServerError(
        ending.error.code,
        `reply: the reply failed (${ending.error.code}): ${ending.error.message}`,
      );
    }
    const { conversation } = await sessions.get(BACKEND, sessionId);
    const toolCalls = conversation.filter(
      (item): item is ToolCallItem => item.type === "tool_call" && item.responseId === ending.responseId,
    );
    return { text: ending.text, reason: ending.reason, sessionId, responseId: ending.responseId, toolCalls };
  } finally {
    options.signal?.removeEventListener("abort", onAbort);
    unsubscribe();
    release();
  }
}
