import type { ConversationItem, SessionEvent } from "@patchbay/protocol";
import { ModelSentences } from "@patchbay/tools";
import type { Logger } from "../observability/logger";
import type { EventDraft, PendingToolCallRecord, Store, TurnRecord } from "../store/store";
import { forEndUsers } from "../turns/reasoning-state";
import { failedResult } from "../turns/tool-results";

const OPEN_CALL = new Set(["pending", "awaiting_approval", "running"]);

/**
 * Ends what a previous process left running when it died: each turn still `running` or
 * `queued` ends with `response.failed { code: "server_restart" }`, its tool calls that had not
 * finished are marked failed, its streaming assistant message keeps the text that was streamed
 * (rebuilt from the event log) with status `failed`, open approvals end as `cancelled`, and
 * pending calls are cleared. The conversation stays whole and the next message works.
 */
export async function recoverInterruptedTurns(store: Store, logger: Logger): Promise<number> {
  const turns: TurnRecord[] = [
    ...(await store.turnsWithStatus("running")),
    ...(await store.turnsWithStatus("queued")),
  ];
  const bySession = new Map<string, TurnRecord[]>();
  for (const turn of turns) bySession.set(turn.sessionId, [...(bySession.get(turn.sessionId) ?? []), turn]);
  const pendingCalls = await store.pendingCalls();

  for (const [sessionId, sessionTurns] of bySession) {
    await endTurns(store, sessionId, sessionTurns, pendingCalls, logger);
  }
  return turns.length;
}

/**
 * The same recovery for one session (cluster mode): a node that takes a session's lease fresh
 * ends what the session's previous owner left running. `store` writes fenced with the new lease.
 */
export async function recoverSession(store: Store, sessionId: string, logger: Logger): Promise<number> {
  const turns: TurnRecord[] = [
    ...(await store.turnsWithStatus("running")),
    ...(await store.turnsWithStatus("queued")),
  ].filter((turn) => turn.sessionId === sessionId);
  if (turns.length === 0) return 0;
  await endTurns(store, sessionId, turns, await store.pendingCalls(sessionId), logger);
  return turns.length;
}

async function endTurns(
  store: Store,
  sessionId: string,
  sessionTurns: TurnRecord[],
  pendingCalls: PendingToolCallRecord[],
  logger: Logger,
): Promise<void> {
  if (!(await store.getSession(sessionId))) return;
  const responseIds = new Set(sessionTurns.map((turn) => turn.responseId));
  const conversation = await store.conversation(sessionId);
  const items: ConversationItem[] = [];
  for (const item of conversation) {
    if (!item.responseId || !responseIds.has(item.responseId)) continue;
    if (item.type === "tool_call" && OPEN_CALL.has(item.status)) {
      items.push({
        ...item,
        status: "failed",
        result: failedResult("failed", "server_restart", ModelSentences.serverRestarted(), item.held),
      });
    } else if (item.type === "message" && item.status === "in_progress") {
      items.push({ ...item, status: "failed", text: await streamedText(store, sessionId, item.id) });
    }
  }
  const approvals = await store.approvals(sessionId, { open: true });
  const events: EventDraft[] = [
    ...approvals.map(
      (approval): EventDraft => ({
        type: "approval.resolved",
        approvalId: approval.request.id,
        callId: approval.request.callId,
        outcome: "cancelled",
      }),
    ),
    ...items.map((item): EventDraft => ({ type: "conversation.updated", item: forEndUsers(item) })),
  ];
  const now = Date.now();
  for (const turn of sessionTurns) {
    events.push({
      type: "response.failed",
      responseId: turn.responseId,
      ...(turn.commandId === undefined ? {} : { commandId: turn.commandId }),
      error: { code: "server_restart", message: "the server restarted while this reply was being made" },
    });
  }
  await store.commit(sessionId, {
    items,
    approvals: approvals.map((approval) => ({ ...approval, outcome: "cancelled", decidedAt: now })),
    settledCalls: pendingCalls.filter((call) => call.sessionId === sessionId).map((call) => call.callId),
    events,
  });
  for (const turn of sessionTurns) {
    await store.commit(sessionId, { turn: { ...turn, status: "failed", endedAt: now } });
  }
  logger.warn("ended turns cut off by a restart", { sessionId, turns: sessionTurns.length });
}

async function streamedText(store: Store, sessionId: string, itemId: string): Promise<string> {
  const events: SessionEvent[] = await store.readEvents(sessionId, 0);
  let text = "";
  for (const event of events) if (event.type === "text.delta" && event.itemId === itemId) text += event.delta;
  return text;
}
