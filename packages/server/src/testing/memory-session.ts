import type { MessageItem, SessionEvent } from "@patchbay/protocol";
import { type AgentFileInput, defineAgent } from "../config/agent-config";
import { silentLogger } from "../observability/logger";
import { SessionLog } from "../sessions/session-log";
import { MemoryStore } from "../store/memory-store";

/** A session on a MemoryStore, with every event it broadcast: for unit tests of what runs on one. */
export interface MemorySession {
  store: MemoryStore;
  log: SessionLog;
  /** Every event the log broadcast, in order. */
  events: SessionEvent[];
  /** The events of one type, in order. */
  eventsOf<T extends SessionEvent["type"]>(type: T): Extract<SessionEvent, { type: T }>[];
  /** Adds a user message as a live session does before its turn runs. */
  userMessage(text: string, commandId?: string): Promise<MessageItem>;
}

export async function memorySession(
  agent: AgentFileInput = { model: { provider: "scripted" } },
): Promise<MemorySession> {
  const store = new MemoryStore();
  const record = { id: "s_1", agent: "a", userId: "u_1", metadata: {}, createdAt: 0, lastSeq: 0 };
  await store.createSession(record);
  const log = new SessionLog(record, defineAgent("a", agent), [], store, silentLogger);
  const events: SessionEvent[] = [];
  log.subscribe((event) => events.push(event));
  let next = 0;
  return {
    store,
    log,
    events,
    eventsOf: <T extends SessionEvent["type"]>(type: T) =>
      events.filter((event): event is Extract<SessionEvent, { type: T }> => event.type === type),
    async userMessage(text, commandId = `c_${++next}`) {
      const item: MessageItem = {
        type: "message",
        id: `m_user_${next}`,
        role: "user",
        text,
        status: "completed",
        createdAt: Date.now(),
      };
      await log.commit({
        command: { commandId, kind: "message" },
        items: [item],
        events: [{ type: "message.created", commandId, item }],
      });
      return item;
    },
  };
}
