import type { ToolSpec } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import type { ModelMessage, ModelRequest, ModelStreamEvent } from "./language-model";
import { ModelError } from "./model-error";
import { scripted } from "./scripted";
import { DEFAULT_SCRIPTED_FALLBACK, ScriptedModelConfigSchema } from "./scripted-config";
import { collect } from "./wire-test-server";

function text(events: ModelStreamEvent[]): string {
  return events.map((e) => (e.type === "text-delta" ? e.delta : "")).join("");
}

const lookupOrder: ToolSpec = {
  name: "lookup_order",
  description: "Looks an order up.",
  parameters: { type: "object", properties: { order_id: { type: "string" } }, required: ["order_id"] },
};

const orderModel = () =>
  scripted({
    rules: [
      {
        match: "where is (my )?order (?<order_id>[A-Z]\\d+)(?: for (?<name>\\w+))?",
        toolCalls: [
          {
            tool: "lookup_order",
            arguments: {
              order_id: "{order_id}",
              customer: "{name}",
              note: "asked about {order_id}",
              urgent: true,
            },
          },
        ],
        reply: "Order {order_id} is {results.lookup_order.status}, arriving {result.eta}.",
        errorReply: "Sorry, I could not look up order {order_id}: {result}",
      },
      { match: "^hello\\b", reply: "Hello there, I am a scripted stand-in." },
    ],
    fallback: "No rule for that.",
  });

describe("scripted", () => {
  it("names a call by a hash of the user message and its place: the ids a replayed conversation already has", async () => {
    const model = orderModel();
    const idOf = async (messages: ModelMessage[]) => {
      const [event] = await collect(model.stream({ messages, tools: [lookupOrder] }));
      if (event?.type !== "tool-call") throw new Error(`expected a tool call, got ${event?.type}`);
      return event.call.id;
    };
    const system: ModelMessage = { role: "system", content: "You help with orders." };
    // 64-bit FNV-1a of `${userIndex}\0${userText}\0${position}`, its top 52 bits in base 36,
    // as computed with BigInt arithmetic before (non-ASCII and a surrogate pair included).
    expect(await idOf([system, { role: "user", content: "Hi, where is order A17?" }])).toBe(
      "call_h5el8a8quj",
    );
    expect(await idOf([system, { role: "user", content: "where is order Z9 for Zoë 🚚?" }])).toBe(
      "call_s0wjvnxpvs",
    );
    expect(
      await idOf([
        system,
        { role: "user", content: "hello" },
        { role: "assistant", content: "Hello there, I am a scripted stand-in." },
        { role: "user", content: "where is order B2" },
      ]),
    ).toBe("call_10rjnav2enc");
  });

  it("drives a full tool-call round: user message, tool call from named groups, tool result, templated reply", async () => {
    const model = orderModel();
    const messages: ModelMessage[] = [
      { role: "system", content: "You help with orders." },
      { role: "user", content: "Hi, where is order A17?" },
    ];
    const request: ModelRequest = { messages, tools: [lookupOrder] };

    const first = await collect(model.stream(request));
    expect(first).toHaveLength(2);
    const callEvent = first[0]!;
    if (callEvent.type !== "tool-call") throw new Error(`expected a tool call, got ${callEvent.type}`);
    const call = callEvent.call;
    expect(call.name).toBe("lookup_order");
    // `{name}` did not participate in the match, so `customer` is left out rather than sent empty.
    expect(call.arguments).toEqual({ order_id: "A17", note: "asked about A17", urgent: true });
    expect(JSON.parse(call.rawArguments)).toEqual(call.arguments);
    expect(call.index).toBe(0);
    expect(call.id).toMatch(/^call_[0-9a-z]+$/);
    expect(first[1]).toMatchObject({ type: "finish", reason: "tool_calls" });

    const again = await collect(model.stream(request));
    expect(again[0]).toEqual(callEvent);

    const withResult: ModelMessage[] = [
      ...messages,
      { role: "assistant", content: "", toolCalls: [call] },
      {
        role: "tool",
        toolCallId: call.id,
        toolName: "lookup_order",
        content: { text: '{"status":"shipped","eta":"Tuesday"}', images: [] },
      },
    ];
    const second = await collect(model.stream({ messages: withResult, tools: [lookupOrder] }));
    expect(text(second)).toBe("Order A17 is shipped, arriving Tuesday.");
    const deltas = second.filter((e) => e.type === "text-delta");
    expect(deltas.length).toBeGreaterThan(3);
    const finish = second.at(-1);
    expect(finish).toMatchObject({ type: "finish", reason: "stop" });
    if (finish?.type === "finish") expect(finish.usage.outputTokens).toBeGreaterThan(0);
  });

  it("sends the error reply when the tool failed", async () => {
    const model = orderModel();
    const messages: ModelMessage[] = [{ role: "user", content: "where is order B2" }];
    const [event] = await collect(model.stream({ messages, tools: [lookupOrder] }));
    if (event?.type !== "tool-call") throw new Error("expected a tool call");
    const reply = await collect(
      model.stream({
        messages: [
          ...messages,
          { role: "assistant", content: "", toolCalls: [event.call] },
          {
            role: "tool",
            toolCallId: event.call.id,
            toolName: "lookup_order",
            content: { text: "order service timed out", images: [] },
            isError: true,
          },
        ],
        tools: [lookupOrder],
      }),
    );
    expect(text(reply)).toBe("Sorry, I could not look up order B2: order service timed out");
  });

  it("gives different call ids to the same question asked twice in one conversation", async () => {
    const model = orderModel();
    const first = await collect(
      model.stream({ messages: [{ role: "user", content: "where is order A1" }], tools: [] }),
    );
    const second = await collect(
      model.stream({
        messages: [
          { role: "user", content: "where is order A1" },
          { role: "assistant", content: "Shipped." },
          { role: "user", content: "where is order A1" },
        ],
        tools: [],
      }),
    );
    const id = (events: ModelStreamEvent[]) =>
      events[0]?.type === "tool-call" ? events[0].call.id : undefined;
    expect(id(first)).toBeDefined();
    expect(id(second)).toBeDefined();
    expect(id(first)).not.toBe(id(second));
  });

  it("replies from a rule without tools, and the fallback when nothing matches", async () => {
    const model = orderModel();
    const hello = await collect(model.stream({ messages: [{ role: "user", content: "Hello!" }], tools: [] }));
    expect(text(hello)).toBe("Hello there, I am a scripted stand-in.");
    const other = await collect(
      model.stream({ messages: [{ role: "user", content: "sing a song" }], tools: [] }),
    );
    expect(text(other)).toBe("No rule for that.");
    const plain = await collect(
      scripted().stream({ messages: [{ role: "user", content: "hi" }], tools: [] }),
    );
    expect(text(plain)).toBe(DEFAULT_SCRIPTED_FALLBACK);
  });

  it("converts typed placeholders and makes parallel calls one at a time when told to", async () => {
    const model = scripted({
      rules: [
        {
          match: "book (?<seats>\\d+) seats? on (?<a>\\w+) and (?<b>\\w+)",
          toolCalls: [
            { tool: "book", arguments: { flight: "{a}", seats: "{seats:integer}" } },
            { tool: "book", arguments: { flight: "{b}", seats: "{seats:number}" } },
          ],
          reply: "Booked: {results.book}",
        },
      ],
      capabilities: { parallelToolCalls: false },
    });
    const messages: ModelMessage[] = [{ role: "user", content: "book 2 seats on LH400 and LH401" }];
    const first = await collect(model.stream({ messages, tools: [] }));
    const calls = first.flatMap((e) => (e.type === "tool-call" ? [e.call] : []));
    expect(calls.map((c) => c.arguments)).toEqual([{ flight: "LH400", seats: 2 }]);
    const after: ModelMessage[] = [
      ...messages,
      { role: "assistant", content: "", toolCalls: calls },
      { role: "tool", toolCallId: calls[0]!.id, toolName: "book", content: { text: "LH400 ok", images: [] } },
    ];
    const second = await collect(model.stream({ messages: after, tools: [] }));
    const next = second.flatMap((e) => (e.type === "tool-call" ? [e.call] : []));
    expect(next.map((c) => c.arguments)).toEqual([{ flight: "LH401", seats: 2 }]);
    expect(next[0]!.id).not.toBe(calls[0]!.id);
    const third = await collect(
      model.stream({
        messages: [
          ...after,
          { role: "assistant", content: "", toolCalls: next },
          {
            role: "tool",
            toolCallId: next[0]!.id,
            toolName: "book",
            content: { text: "LH401 ok", images: [] },
          },
        ],
        tools: [],
      }),
    );
    expect(text(third)).toBe("Booked: LH400 ok\nLH401 ok");
  });

  it("stops with `aborted` when the signal aborts between deltas", async () => {
    const model = scripted({ rules: [{ match: ".", reply: "one two three four five six" }], delayMs: 20 });
    const controller = new AbortController();
    const seen: string[] = [];
    const run = async () => {
      for await (const event of model.stream({
        messages: [{ role: "user", content: "x" }],
        tools: [],
        signal: controller.signal,
      })) {
        if (event.type === "text-delta") seen.push(event.delta);
        if (seen.length === 2) controller.abort();
      }
    };
    await expect(run()).rejects.toMatchObject({ code: "aborted" });
    expect(seen).toEqual(["one ", "two "]);
  });

  it("streams the same events with and without a delay, and stops with `aborted` without one too", async () => {
    const rules = [
      {
        match: "order (?<order_id>\\w+)",
        toolCalls: [{ tool: "lookup_order", arguments: { order_id: "{order_id}" } }],
        reply:
          "Order {order_id} is {results.lookup_order.status}, due {results.lookup_order.eta}; {result.status}.",
      },
    ];
    const user: ModelMessage = { role: "user", content: "order A1" };
    const asked = await collect(scripted({ rules }).stream({ messages: [user], tools: [] }));
    const calls = asked.flatMap((e) => (e.type === "tool-call" ? [e.call] : []));
    const answered: ModelMessage[] = [
      user,
      { role: "assistant", content: "", toolCalls: calls },
      {
        role: "tool",
        toolCallId: calls[0]!.id,
        toolName: "lookup_order",
        content: { text: '{"status":"shipped","eta":"Friday"}', images: [] },
      },
    ];
    const immediate = await collect(scripted({ rules }).stream({ messages: answered, tools: [] }));
    const paced = await collect(scripted({ rules, delayMs: 1 }).stream({ messages: answered, tools: [] }));
    expect(immediate).toEqual(paced);
    expect(text(immediate)).toBe("Order A1 is shipped, due Friday; shipped.");

    const controller = new AbortController();
    const seen: string[] = [];
    const run = async () => {
      for await (const event of scripted({ rules }).stream({
        messages: answered,
        tools: [],
        signal: controller.signal,
      })) {
        if (event.type === "text-delta") seen.push(event.delta);
        if (seen.length === 2) controller.abort();
      }
    };
    await expect(run()).rejects.toMatchObject({ code: "aborted" });
    expect(seen).toEqual(["Order ", "A1 "]);
  });

  it("ends a stream its reader leaves early, and a stream ended gives nothing more", async () => {
    const stream = scripted({ rules: [{ match: ".", reply: "one two three" }] }).stream({
      messages: [{ role: "user", content: "x" }],
      tools: [],
    });
    const iterator = stream[Symbol.asyncIterator]();
    expect(await iterator.next()).toEqual({ done: false, value: { type: "text-delta", delta: "one " } });
    for await (const event of { [Symbol.asyncIterator]: () => iterator }) {
      expect(event).toEqual({ type: "text-delta", delta: "two " });
      break;
    }
    expect(await iterator.next()).toEqual({ done: true, value: undefined });
  });

  it("rejects a config with a broken regex or a rule that says nothing, naming the field", () => {
    const broken = ScriptedModelConfigSchema.safeParse({ rules: [{ match: "(unclosed", reply: "x" }] });
    expect(broken.success).toBe(false);
    expect(broken.error?.issues[0]?.path).toEqual(["rules", 0, "match"]);
    const silent = ScriptedModelConfigSchema.safeParse({ rules: [{ match: "x" }] });
    expect(silent.error?.issues[0]?.path).toEqual(["rules", 0, "reply"]);
    expect(() => scripted({ rules: [{ match: "(", reply: "x" }] })).toThrow(ModelError);
    expect(ScriptedModelConfigSchema.safeParse({ provider: "scripted", rules: [], typo: 1 }).success).toBe(
      false,
    );
  });
});
