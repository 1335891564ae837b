import type { InboundMessage } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import { type ChannelSessionOptions, ChannelSessions } from "./channel-sessions";

function message(channelId: string | null, extra: Partial<InboundMessage> = {}): InboundMessage {
  return {
    id: `m_${channelId}`,
    agent: "support",
    sessionId: null,
    channel: channelId === null ? null : { type: "sms", id: channelId },
    user: { id: `u_${channelId}` },
    text: "hi",
    createdAt: 0,
    metadata: {},
    ...extra,
  };
}

function source() {
  const created: ChannelSessionOptions[] = [];
  let next = 0;
  let failNext = false;
  return {
    created,
    failOnce: () => {
      failNext = true;
    },
    agent: {
      sessions: {
        create: async (options?: ChannelSessionOptions) => {
          await new Promise((r) => setTimeout(r, 5));
          if (failNext) {
            failNext = false;
            throw new Error("server said no");
          }
          created.push(options ?? {});
          return { id: `s_${++next}` };
        },
      },
    },
  };
}

describe("ChannelSessions", () => {
  it("opens one session per channel and reuses it, even for concurrent messages", async () => {
    const s = source();
    const sessions = new ChannelSessions(100);
    const [a, b] = await Promise.all([
      sessions.get(message("+1"), () => s.agent),
      sessions.get(message("+1"), () => s.agent),
    ]);
    const c = await sessions.get(message("+2"), () => s.agent);
    const again = await sessions.get(message("+1"), () => s.agent);
    expect(a).toBe(b);
    expect(again).toBe(a);
    expect(c).not.toBe(a);
    expect(s.created).toEqual([
      { userId: "u_+1", metadata: { channel: { type: "sms", id: "+1" } } },
      { userId: "u_+2", metadata: { channel: { type: "sms", id: "+2" } } },
    ]);
  });

  it("forgets a failed create so the next message tries again", async () => {
    const s = source();
    const sessions = new ChannelSessions(100);
    s.failOnce();
    await expect(sessions.get(message("+1"), () => s.agent)).rejects.toThrow("server said no");
    await expect(sessions.get(message("+1"), () => s.agent)).resolves.toEqual({ id: "s_1" });
  });

  it("refuses a message without a channel with a stable code", async () => {
    const sessions = new ChannelSessions(100);
    await expect(
      sessions.get(message(null, { sessionId: "s_9" }), () => source().agent),
    ).rejects.toMatchObject({
      code: "no_channel",
      message: expect.stringContaining("answer(message)"),
    });
  });

  it("forgets the least recently used channel past its limit", async () => {
    const s = source();
    const sessions = new ChannelSessions(2);
    const first = await sessions.get(message("+1"), () => s.agent);
    await sessions.get(message("+2"), () => s.agent);
    await sessions.get(message("+1"), () => s.agent); // +1 is now the most recent
    await sessions.get(message("+3"), () => s.agent); // evicts +2
    expect(sessions.size).toBe(2);
    expect(await sessions.get(message("+1"), () => s.agent)).toBe(first);
    await sessions.get(message("+2"), () => s.agent);
    expect(s.created.map((o) => (o.metadata!.channel as { id: string }).id)).toEqual([
      "+1",
      "+2",
      "+3",
      "+2",
    ]);
  });
});
