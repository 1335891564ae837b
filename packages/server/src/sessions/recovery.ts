import type { ConversationItem, MessageItem, SessionEvent, ToolCallItem } from "@patchbay/protocol";
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
 * A turn cut off mid hosted calls that the node taking its session over goes on with
 * (`LiveSession.resumeTurn`): the calls still running, the message it answers, and how many
 * model replies with calls it made (the calls of one reply share their `createdAt`).
 */
export interface ResumableTurn {
  turn: TurnRecord;
  calls: ToolCallItem[];
  userItem: MessageItem;
  rounds: number;
}

/**
 * The same recovery for one session (cluster mode): a node that takes a session's lease fresh
 * ends what the session's previous owner left running. `store` writes fenced with the new lease.
 * A running turn whose open calls include hosted calls still `running` that `redeliverable`
 * accepts (some live worker hosts the tool) is not ended: those calls stay open, the turn's
 * other open calls end `server_restart`, and the turn is handed back to be resumed, so its
 * calls finish (exactly once: their hosts key side effects on the call id) and the model answers.
 */
export async function recoverSession(
  store: Store,
  sessionId: string,
  logger: Logger,
  redeliverable: (item: ToolCallItem) => boolean = () => false,
): Promise<{ ended: number; resumed: ResumableTurn | undefined }> {
  const turns: TurnRecord[] = [
    ...(await store.turnsWithStatus("running")),
    ...(await store.turnsWithStatus("queued")),
  ].filter((turn) => turn.sessionId === sessionId);
  if (turns.length === 0) return { ended: 0, resumed: undefined };
  const conversation = await store.conversation(sessionId);
  const resumed = resumableTurn(turns, conversation, redeliverable);
  const ending = turns.filter((turn) => turn !== resumed?.turn);
  await endTurns(store, sessionId, ending, await store.pendingCalls(sessionId), logger, resumed);
  return { ended: ending.length, resumed };
}

function resumableTurn(
  turns: readonly TurnRecord[],
  conversation: readonly ConversationItem[],
  redeliverable: (item: ToolCallItem) => boolean,
): ResumableTurn | undefined {
  const turn = turns.find((t) => t.status === "running");
  if (!turn) return undefined;
  const calls = conversation.filter(
    (item): item is ToolCallItem =>
      item.type === "tool_call" &&
      item.responseId === turn.responseId &&
      item.status === "running" &&
      item.location === "worker" &&
      redeliverable(item),
  );
  if (calls.length === 0) return undefined;
  const firstCall = conversation.indexOf(calls[0]!);
  const userItem = conversation
    .slice(0, firstCall)
    .reverse()
    .find((item): item is MessageItem => item.type === "message" && item.role === "user");
  if (!userItem) return undefined;
  const rounds = new Set(
    conversation
      .filter((item) => item.type === "tool_call" && item.responseId === turn.responseId)
      .map((item) => item.createdAt),
  ).size;
  return { turn, calls, userItem, rounds };
}

async function endTurns(
  store: Store,
  sessionId: string,
  sessionTurns: TurnRecord[],
  pendingCalls: PendingToolCallRecord[],
  logger: Logger,
  resumed?: ResumableTurn,
): Promise<void> {
  if (!(await store.getSession(sessionId))) return;
  const responseIds = new Set(sessionTurns.map((turn) => turn.responseId));
  if (resumed) responseIds.add(resumed.turn.responseId);
  const keep = new Set(resumed?.calls.map((call) => call.id));
  const conversation = await store.conversation(sessionId);
  const items: ConversationItem[] = [];
  for (const item of conversation) {
    if (!item.responseId || !responseIds.has(item.responseId) || keep.has(item.id)) continue;
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
  if (events.length === 0 && sessionTurns.length === 0) return;
  await store.commit(sessionId, {
    items,
    approvals: approvals.map((approval) => ({ ...approval, outcome: "cancelled", decidedAt: now })),
    settledCalls: pendingCalls.filter((call) => call.sessionId === sessionId).map((call) => call.callId),
    events,
  });
  for (const turn of sessionTurns) {
    await store.commit(sessionId, { turn: { ...turn, status: "failed", endedAt: now } });
  }
  if (sessionTurns.length > 0)
    logger.warn("ended turns cut off by a restart", { sessionId, turns: sessionTurns.length });
}

async function streamedText(store: Store, sessionId: string, itemId: string): Promise<string> {
  const events: SessionEvent[] = await store.readEvents(sessionId, 0);
  let text = "";
  for (const event of events) if (event.type === "text.delta" && event.itemId === itemId) text += event.delta;
  return text;
}
