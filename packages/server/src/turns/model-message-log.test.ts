// The model's messages kept incrementally (ModelMessageLog) against the rule they must equal:
// `toModelMessages` over the whole conversation, rebuilt from scratch.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createModel, type LanguageModel, type ModelMessage } from "@patchbay/models";
import type { ConversationItem, MessageItem, ToolCallItem, ToolResult, ToolSpec } from "@patchbay/protocol";
import { describe, expect, it, onTestFinished } from "vitest";
import { defineAgent } from "../config/agent-config";
import { silentLogger } from "../observability/logger";
import { ServerMetrics } from "../observability/metrics";
import { ConversationWindow } from "../sessions/conversation-window";
import { SessionLog } from "../sessions/session-log";
import { SqliteStore } from "../store/sqlite-store";
import type { ToolBackend } from "../tools/tool-backend";
import { ApprovalFlow } from "./approval-flow";
import { ModelMessageLog } from "./model-message-log";
import { toModelMessages } from "./model-messages";
import { Turn } from "./turn-loop";

const INSTRUCTIONS = "Answer questions about orders.";

/** A small deterministic generator (mulberry32), so a failure replays. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function user(id: string, text: string): MessageItem {
  return { type: "message", id, role: "user", text, status: "completed", createdAt: 0 };
}

function assistant(id: string, responseId: string, text: string): MessageItem {
  return { type: "message", id, role: "assistant", text, status: "completed", responseId, createdAt: 0 };
}

function call(id: string, responseId: string, result?: string): ToolCallItem {
  return {
    type: "tool_call",
    id,
    providerCallId: `p_${id}`,
    name: "lookup_order",
    arguments: { order_id: id },
    status: result === undefined ? "running" : "completed",
    held: false,
    attempt: 1,
    responseId,
    createdAt: 0,
    ...(result === undefined
      ? {}
      : { result: { outcome: "completed", content: { text: result, images: [] } } }),
  };
}

describe("ModelMessageLog", () => {
  it("equals a fresh rebuild through random adds, replacements and window cuts", () => {
    for (let seed = 1; seed <= 40; seed++) {
      const next = random(seed);
      const window = new ConversationWindow([]);
      const log = new ModelMessageLog(window);
      const held: ConversationItem[] = [];
      let response = 0;
      for (let step = 0; step < 120; step++) {
        const roll = next();
        if (roll < 0.2) held.push(user(`u${step}`, `question ${step}`));
        else if (roll < 0.35)
          held.push(assistant(`a${step}`, `r${response}`, next() < 0.3 ? "" : `reply ${step}`));
        else if (roll < 0.55) held.push(call(`c${step}`, `r${response}`));
        else if (roll < 0.6) response++;
        else if (roll < 0.85 && held.length > 0) {
          // Replace an item (a call's final state, a message's text), most often a recent one.
          const at = held.length - 1 - Math.floor(next() ** 3 * held.length);
          const old = held[at]!;
          // Now and then one that moves a boundary between segments (another response).
          const responseId = next() < 0.15 ? `r${response - 1 + Math.floor(next() * 3)}` : old.responseId;
          held[at] =
            old.type === "tool_call"
              ? {
                  ...old,
                  status: "completed",
                  responseId: responseId ?? old.responseId,
                  result: { outcome: "completed", content: { text: `r${step}`, images: [] } },
                }
              : { ...old, text: `${old.text} more`, ...(responseId ? { responseId } : {}) };
        } else if (roll < 0.9) {
          window.setLimit(10 + Math.floor(next() * 40));
        }
        const changed = held.at(-1);
        if (changed) for (const item of held) if (window.get(item.id) !== item) window.apply(item);
        if (next() < 0.5) {
          expect(log.read(INSTRUCTIONS), `seed ${seed} step ${step}`).toEqual(
            toModelMessages(INSTRUCTIONS, window.all()),
          );
        }
      }
      expect(log.read(INSTRUCTIONS)).toEqual(toModelMessages(INSTRUCTIONS, window.all()));
    }
  });

  it("rebuilds the segment before a replaced item whose end the item decides", () => {
    const window = new ConversationWindow([
      user("u1", "hi"),
      assistant("a1", "r1", "Checking"),
      call("c1", "r2"),
    ]);
    const log = new ModelMessageLog(window);
    expect(log.read("")).toEqual(toModelMessages("", window.all()));
    // The call joins the assistant message's batch once it is of the same response.
    const joined = call("c1", "r1", "shipped");
    expect(log.read("", [joined])).toEqual(toModelMessages("", [...window.all().slice(0, 2), joined]));
    window.apply(joined);
    expect(log.read("")).toEqual(toModelMessages("", window.all()));
    expect(log.read("")).toHaveLength(3);
  });

  it("reads overrides in place without keeping them", () => {
    const window = new ConversationWindow([user("u1", "where is A1"), call("c1", "r1")]);
    const log = new ModelMessageLog(window);
    const final = call("c1", "r1", "shipped");
    expect(log.read("", [final])).toEqual(toModelMessages("", [user("u1", "where is A1"), final]));
    // Not applied to the conversation: the next read is the conversation's again.
    expect(log.read("")).toEqual(toModelMessages("", window.all()));
  });

  it("reads an override the conversation does not hold yet after its last item, without keeping it", () => {
    const window = new ConversationWindow([user("u1", "where is A1"), assistant("a1", "r1", "Shipped.")]);
    const log = new ModelMessageLog(window);
    expect(log.read("")).toEqual(toModelMessages("", window.all()));
    const next = user("u2", "and A2?");
    expect(log.read(INSTRUCTIONS, [next])).toEqual(toModelMessages(INSTRUCTIONS, [...window.all(), next]));
    expect(log.read("")).toEqual(toModelMessages("", window.all()));
    // Once it is written it is read from the conversation, in the same place.
    window.apply(next);
    expect(log.read(INSTRUCTIONS)).toEqual(toModelMessages(INSTRUCTIONS, window.all()));
  });
});

const lookup: ToolSpec = {
  name: "lookup_order",
  description: "Finds an order",
  parameters: { type: "object", properties: { order_id: { type: "string" } }, required: ["order_id"] },
};

/** Runs in this process; with `hang`, waits until cancelled (an interruptible call). */
function backend(hang: () => boolean): ToolBackend {
  const waiting = new Map<string, (result: ToolResult) => void>();
  return {
    location: "server",
    remote: false,
    specs: () => [{ ...lookup, interruptible: true }],
    has: (name) => name === lookup.name,
    timeoutCeilingMs: () => 60_000,
    run(routed) {
      if (!hang()) return Promise.resolve({ outcome: "completed", content: { text: "shipped", images: [] } });
      return new Promise<ToolResult>((resolve) => waiting.set(routed.callId, resolve));
    },
    cancel(callId) {
      waiting.get(callId)?.({ outcome: "cancelled", content: { text: "stopped", images: [] } });
    },
  };
}

describe("a session's model messages", () => {
  it("equal a fresh rebuild after turns with tool calls, an interrupt and a resume", async () => {
    // SQLite, as a server runs: a call's final item is then still queued when the next round reads it.
    const dataDir = mkdtempSync(join(tmpdir(), "pb-model-messages-"));
    const store = new SqliteStore({ dataDir });
    onTestFinished(async () => {
      await store.close();
      rmSync(dataDir, { recursive: true, force: true });
    });
    const record = { id: "s_1", agent: "a", userId: "u_1", metadata: {}, createdAt: 0, lastSeq: 0 };
    await store.createSession(record);
    const agent = defineAgent("a", {
      instructions: INSTRUCTIONS,
      model: {
        provider: "scripted",
        rules: [
          {
            match: "order (?<id>\\w+)",
            toolCalls: [
              { tool: "lookup_order", arguments: { order_id: "{id}" } },
              { tool: "lookup_order", arguments: { order_id: "{id}" } },
            ],
            reply: "Order: {results.lookup_order}",
          },
        ],
        capabilities: { parallelToolCalls: false },
      },
    });
    const log = new SessionLog(record, agent, [], store, silentLogger);
    let sent = 0;
    const session = {
      log,
      async userMessage(text: string): Promise<MessageItem> {
        const item = user(`m_user_${++sent}`, text);
        await log.commit({ items: [item], events: [{ type: "message.created", item }] });
        return item;
      },
    };
    const scripted = createModel(session.log.agent.model);
    // What the model was given in each round, and the conversation's length then.
    const rounds: { messages: ModelMessage[]; conversation: ConversationItem[] }[] = [];
    const model: LanguageModel = {
      ...scripted,
      stream(request) {
        rounds.push({ messages: request.messages, conversation: session.log.conversation() });
        return scripted.stream(request);
      },
    };
    let hang = false;
    const approvals = new ApprovalFlow(session.log, { defaultExpiresInMs: 60_000 });
    const turn = async (text: string, responseId: string) =>
      new Turn({
        runtime: session.log,
        model,
        approvals,
        backends: [backend(() => hang)],
        responseId,
        userItem: await session.userMessage(text),
        user: { id: "u_1" },
        progressIntervalMs: 10,
        logger: silentLogger,
        metrics: new ServerMetrics(),
      });
    const rebuilt = () => toModelMessages(INSTRUCTIONS, session.log.conversation());

    expect(await (await turn("where is order A1", "r_1")).run()).toBe("completed");
    expect(session.log.modelMessages()).toEqual(rebuilt());
    expect(await (await turn("and order B2", "r_2")).run()).toBe("completed");
    expect(session.log.modelMessages()).toEqual(rebuilt());

    hang = true;
    const interrupted = await turn("order C3 please", "r_3");
    const running = interrupted.run();
    await expect.poll(() => session.log.conversation().filter((i) => i.type === "tool_call").length).toBe(5);
    interrupted.interrupt();
    expect(await running).toBe("interrupted");
    expect(session.log.modelMessages()).toEqual(rebuilt());

    // Each round saw the conversation as it stood, with the calls of the round before in their
    // final state (their commits still queued): a rebuild of those items.
    const finalItems = new Map(session.log.conversation().map((item) => [item.id, item]));
    for (const round of rounds) {
      const items = round.conversation.map((item) => finalItems.get(item.id) ?? item);
      expect(round.messages).toEqual(toModelMessages(INSTRUCTIONS, items));
    }
    expect(rounds.length).toBe(7);

    // A resume: the session loaded again from the store builds the same messages.
    await session.log.settled();
    const resumed = new SessionLog(
      (await store.getSession("s_1"))!,
      agent,
      await store.conversation("s_1"),
      store,
      silentLogger,
    );
    expect(resumed.modelMessages()).toEqual(session.log.modelMessages());
    expect(resumed.modelMessages()).toEqual(rebuilt());
  });
});
