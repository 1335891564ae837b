import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { z } from "zod";
// The Node entry, which installs its fast paths on import (useFastPaths, its zod compiler).
import { ToolExecutor, Tools } from "./index";

describe("the Node entry's executor", () => {
  describe("on its fast paths", () => {
    beforeEach(() => {
      vi.useFakeTimers();
    });
    afterEach(() => {
      vi.useRealTimers();
    });

    const tools = new Tools()
      .register({
        name: "lookup",
        description: "d",
        parameters: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
        run: ({ id }) => `order ${id}`,
      })
      .register({
        name: "book",
        description: "d",
        parameters: z.object({ seats: z.number().max(9) }),
        run: ({ seats }) => seats,
      })
      .register({
        name: "slow",
        description: "d",
        timeoutMs: 1_000,
        idleTimeoutMs: 300,
        run: async (_args, _signal, ctx) => {
          ctx.update("working");
          await new Promise(() => {});
        },
      });

    it("runs calls, counts their deliveries, checks their arguments and times them out", async () => {
      const executor = new ToolExecutor({ tools });
      const first = await executor.execute({ id: "c1", name: "lookup", arguments: { id: "A1" } });
      expect(first).toMatchObject({ outcome: "completed", attempt: 1, content: { text: "order A1" } });
      expect((await executor.execute({ id: "c1", name: "lookup", arguments: { id: "A1" } })).attempt).toBe(2);
      expect(
        (await executor.execute({ id: "c1", name: "lookup", arguments: { id: "A1" } }, { attempt: 5 }))
          .attempt,
      ).toBe(5);
      expect((await executor.execute({ id: "c1", name: "lookup", arguments: { id: "A1" } })).attempt).toBe(6);
      expect(await executor.execute({ id: "c2", name: "lookup", arguments: {} })).toMatchObject({
        outcome: "invalid_arguments",
      });
      expect(await executor.execute({ id: "c3", name: "book", arguments: { seats: 2 } })).toMatchObject({
        outcome: "completed",
        value: 2,
      });
      expect(await executor.execute({ id: "c4", name: "book", arguments: { seats: 12 } })).toMatchObject({
        outcome: "invalid_arguments",
        error: { message: "seats: Input should be less than or equal to 9" },
      });
      const idle = executor.execute({ id: "c5", name: "slow", arguments: {} });
      await vi.advanceTimersByTimeAsync(300);
      expect(await idle).toMatchObject({ outcome: "timed_out", error: { code: "idle_timeout" } });
    });

    it("starts a call inside execute() when the store answers at once, after a durable store's answer", async () => {
      const ran: string[] = [];
      const marking = new Tools().register({
        name: "mark",
        description: "d",
        run: (_args, _signal, ctx) => {
          ran.push(ctx.id);
          return `ran ${ctx.id}`;
        },
      });
      // The in-memory default answers at once: the tool has run by the time execute() returns.
      const atOnce = new ToolExecutor({ tools: marking });
      const first = atOnce.execute({ id: "c1", name: "mark", arguments: {} });
      expect(ran).toEqual(["c1"]);
      expect(await first).toMatchObject({ outcome: "completed", content: { text: "ran c1" } });
      // Delivered again: the stored result, at once too, without running the tool again.
      const again = await atOnce.execute({ id: "c1", name: "mark", arguments: {} });
      expect(again).toMatchObject({ outcome: "completed", attempt: 2, content: { text: "ran c1" } });
      expect(ran).toEqual(["c1"]);
      // A durable store's answer comes later: the call waits for it.
      const stored = new Map<string, unknown>();
      const durable = new ToolExecutor({
        tools: marking,
        idempotencyStore: {
          get: async (key) => stored.get(key) as never,
          set: async (key, result) => {
            stored.set(key, result);
          },
        },
      });
      const later = durable.execute({ id: "c2", name: "mark", arguments: {} });
      expect(ran).toEqual(["c1"]);
      expect(await later).toMatchObject({ outcome: "completed", content: { text: "ran c2" } });
      expect(ran).toEqual(["c1", "c2"]);
      expect((await durable.execute({ id: "c2", name: "mark", arguments: {} })).attempt).toBe(2);
      expect(ran).toEqual(["c1", "c2"]);
    });
  });
});
