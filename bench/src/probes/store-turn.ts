// The changes a turn of scenario 4 commits, for the probes that drive a SqliteStore directly
// (store-pages.ts, store-cost.ts): the message with its command and queued turn; the turn running
// with its call pending and running; the call's end with the reply and the turn's end.
import type { SessionChange, SqliteStore } from "@patchbay/server";

let n = 0;
// Random ids, as the server's (`r_${nanoid(12)}` and the like): where a key by id puts a new row
// depends on it. `--ordered-ids` gives ids that grow instead (the probes' ids before the
// turn-store pass, which hid the cost of keys by random id).
const orderedIds = process.argv.includes("--ordered-ids");
/** A new id with this prefix. */
export const id = (prefix: string) =>
  orderedIds
    ? `${prefix}_${(n++).toString(36)}${Math.random().toString(36).slice(2, 10)}`
    : `${prefix}_${Math.random().toString(36).slice(2, 10)}${(n++).toString(36)}`;

const message = (itemId: string, role: "user" | "assistant", text: string, status = "completed") =>
  ({ type: "message", id: itemId, role, text, status, createdAt: Date.now() }) as const;
const call = (callId: string, status: string) => ({
  type: "tool_call" as const,
  id: callId,
  providerCallId: `p${callId}`,
  name: "lookup_order",
  arguments: { orderId: "A1001" },
  location: "worker" as const,
  status,
  createdAt: Date.now(),
  ...(status === "completed" ? { result: { ok: true, content: { status: "shipped", eta: "2 days" } } } : {}),
});
const REPLY = "Order A1001 is shipped, arriving in 2 days.";

/** The changes of one turn, as scenario 4's server commits them (see `--apart`). */
export function turnChanges(sessionId: string, apart = false): SessionChange[] {
  const responseId = id("r");
  const commandId = id("c");
  const callId = id("call");
  const reply = id("m");
  const turn = (status: "queued" | "running" | "completed") => ({
    responseId,
    sessionId,
    commandId,
    status,
    startedAt: 1,
    ...(status === "completed" ? { endedAt: 2 } : {}),
  });
  const user = message(id("m"), "user", "Where is order A1001?");
  const changes = [
    {
      command: { commandId, kind: "message" },
      items: [user],
      turn: turn("queued"),
      events: [{ type: "message.created", commandId, item: user }],
    },
    {
      turn: turn("running"),
      items: [call(callId, "pending"), call(callId, "running")],
      events: [
        { type: "response.started", responseId, commandId },
        { type: "conversation.updated", item: call(callId, "pending") },
        { type: "conversation.updated", item: call(callId, "running") },
      ],
    },
    {
      turn: turn("completed"),
      items: [
        call(callId, "completed"),
        message(reply, "assistant", "", "in_progress"),
        message(reply, "assistant", REPLY),
      ],
      events: [
        { type: "conversation.updated", item: call(callId, "completed") },
        { type: "conversation.updated", item: message(reply, "assistant", "", "in_progress") },
        { type: "text.delta", responseId, itemId: reply, delta: REPLY },
        { type: "message.completed", item: message(reply, "assistant", REPLY) },
        {
          type: "response.completed",
          responseId,
          commandId,
          reason: "stop",
          text: REPLY,
          usage: { inputTokens: 1, outputTokens: 1 },
        },
      ],
    },
  ];
  if (!apart) {
    // The message and the turn's start in one change, the turn's record the later one.
    const [message, started, end] = changes as unknown as SessionChange[];
    const joined: SessionChange = {
      ...message!,
      turn: started!.turn!,
      items: [...message!.items!, ...started!.items!],
      events: [...message!.events!, ...started!.events!],
    };
    return [joined, end!];
  }
  return changes as unknown as SessionChange[];
}

/** `sessions` new sessions (`s_0`, `s_1`...) with `history` turns each committed; their ids. */
export async function seedSessions(
  store: SqliteStore,
  sessions: number,
  history: number,
  apart = false,
): Promise<string[]> {
  const ids = Array.from({ length: sessions }, (_, i) => `s_${i}`);
  for (const sessionId of ids)
    await store.createSession({
      id: sessionId,
      agent: "a",
      userId: "u",
      metadata: {},
      createdAt: 0,
      lastSeq: 0,
    });
  for (let t = 0; t < history; t++)
    for (const sessionId of ids)
      for (const change of turnChanges(sessionId, apart)) await store.commit(sessionId, change);
  return ids;
}
