import { describe, expect, it } from "vitest";
import { FrameInbox, FrameScheduler } from "./frame-inbox";

const turn = () => new Promise((resolve) => setImmediate(resolve));

function inbox(scheduler: FrameScheduler, name: string, seen: string[], maxQueuedBytes = 1_000) {
  const flow = {
    paused: 0,
    resumed: 0,
    pause: () => {
      flow.paused++;
    },
    resume: () => {
      flow.resumed++;
    },
  };
  const box = new FrameInbox(scheduler, (data) => seen.push(`${name}${data}`), flow, maxQueuedBytes);
  return { box, flow };
}

/** An inbox whose handler throws on the frame "boom" and records the others as `bad<frame>`. */
function throwingInbox(scheduler: FrameScheduler, seen: string[]): FrameInbox {
  return new FrameInbox(
    scheduler,
    (data) => {
      if (String(data) === "boom") throw new Error("boom");
      seen.push(`bad${data}`);
    },
    { pause() {}, resume() {} },
    1_000,
  );
}

/** Runs `body` with this process's uncaught exceptions collected in `thrown` instead of failing the run. */
async function catchingUncaught(body: (thrown: unknown[]) => Promise<void>): Promise<void> {
  const thrown: unknown[] = [];
  const listener = (error: unknown) => thrown.push(error);
  const before = process.listeners("uncaughtException");
  process.removeAllListeners("uncaughtException");
  process.on("uncaughtException", listener);
  try {
    await body(thrown);
  } finally {
    process.off("uncaughtException", listener);
    for (const l of before) process.on("uncaughtException", l);
  }
}

describe("FrameInbox", () => {
  it("takes one frame of each socket per round, so a flood waits behind itself", async () => {
    const scheduler = new FrameScheduler();
    const seen: string[] = [];
    const flood = inbox(scheduler, "a", seen).box;
    const healthy = inbox(scheduler, "b", seen).box;
    for (let i = 1; i <= 4; i++) flood.push(Buffer.from(String(i)));
    healthy.push(Buffer.from("1"));
    expect(seen).toEqual([]);
    await turn();
    expect(seen).toEqual(["a1", "b1", "a2", "a3", "a4"]);
    expect(flood.size).toBe(0);
    expect(flood.queuedBytes).toBe(0);
  });

  it("keeps the round-robin order across rounds and turns, with a socket made ready by a handler", async () => {
    const scheduler = new FrameScheduler(1);
    const seen: string[] = [];
    const c = inbox(scheduler, "c", seen).box;
    const a = new FrameInbox(
      scheduler,
      (data) => {
        seen.push(`a${data}`);
        if (String(data) === "1") c.push(Buffer.from("1")); // ready while a round is served
        if (String(data) === "2") {
          const until = performance.now() + 2;
          while (performance.now() < until) {} // uses the turn's slice: the turn ends after this round
        }
      },
      { pause() {}, resume() {} },
      1_000,
    );
    const b = inbox(scheduler, "b", seen).box;
    for (let i = 1; i <= 3; i++) a.push(Buffer.from(String(i)));
    for (let i = 1; i <= 2; i++) b.push(Buffer.from(String(i)));
    await turn();
    expect(seen).toEqual(["a1", "b1", "c1", "a2", "b2"]);
    await turn();
    expect(seen).toEqual(["a1", "b1", "c1", "a2", "b2", "a3"]);
    b.push(Buffer.from("3"));
    a.push(Buffer.from("4"));
    await turn();
    expect(seen.slice(6)).toEqual(["b3", "a4"]);
  });

  it("lets the event loop read again once a turn used its slice", async () => {
    const scheduler = new FrameScheduler(1);
    const seen: string[] = [];
    const slow = new FrameInbox(
      scheduler,
      (data) => {
        const until = performance.now() + 2;
        while (performance.now() < until) {} // a frame that takes 2 ms to handle
        seen.push(String(data));
      },
      { pause() {}, resume() {} },
      1_000,
    );
    for (let i = 1; i <= 3; i++) slow.push(Buffer.from(String(i)));
    await turn();
    expect(seen).toEqual(["1"]);
    await turn();
    expect(seen).toEqual(["1", "2"]);
  });

  it("pauses a socket over its bound until half of it is handled, and drops what a closed socket left", async () => {
    const scheduler = new FrameScheduler();
    const seen: string[] = [];
    const { box, flow } = inbox(scheduler, "a", seen, 10);
    for (let i = 0; i < 3; i++) box.push(Buffer.alloc(4, 48 + i));
    expect(flow.paused).toBe(1); // 12 bytes waiting, over 10
    let resumedAt = -1;
    const flowResume = flow.resume;
    flow.resume = () => {
      resumedAt = box.size; // frames still waiting when it was resumed
      flowResume();
    };
    box.push(Buffer.alloc(0));
    await turn();
    expect(flow.resumed).toBe(1);
    expect(resumedAt).toBe(2); // after the second frame: 4 bytes left, at most half of 10
    expect(seen).toEqual(["a0000", "a1111", "a2222", "a"]);
    box.push(Buffer.from("x"));
    box.drop();
    expect(box.size).toBe(0); // a closed socket's frames are forgotten, never handled
    box.push(Buffer.from("late"));
    for (let i = 0; i < 3; i++) await turn();
    expect(seen).toEqual(["a0000", "a1111", "a2222", "a"]);
  });

  it("goes on with the other sockets when one frame's handler throws", async () => {
    const scheduler = new FrameScheduler();
    const seen: string[] = [];
    await catchingUncaught(async (thrown) => {
      const bad = throwingInbox(scheduler, seen);
      const good = inbox(scheduler, "good", seen).box;
      bad.push(Buffer.from("boom"));
      bad.push(Buffer.from("2"));
      good.push(Buffer.from("1"));
      await turn();
      await turn();
      expect(seen).toEqual(["good1", "bad2"]);
      expect(thrown).toHaveLength(1);
    });
  });

  describe("a frame that comes alone (atOnce)", () => {
    it("is handled in its read's callback; a second frame of the same loop iteration waits for the turn", async () => {
      const scheduler = new FrameScheduler(1, true);
      const seen: string[] = [];
      const a = inbox(scheduler, "a", seen).box;
      const b = inbox(scheduler, "b", seen).box;
      a.push(Buffer.from("1"));
      expect(seen).toEqual(["a1"]);
      b.push(Buffer.from("1"));
      a.push(Buffer.from("2"));
      expect(seen).toEqual(["a1"]);
      await turn();
      expect(seen).toEqual(["a1", "b1", "a2"]);
    });

    it("waits behind a busy turn: after one that served many frames a lone one queues, after one that served one it does not", async () => {
      const scheduler = new FrameScheduler(1, true);
      const seen: string[] = [];
      const a = inbox(scheduler, "a", seen).box;
      const b = inbox(scheduler, "b", seen).box;
      a.push(Buffer.from("1")); // at once
      for (let i = 2; i <= 4; i++) a.push(Buffer.from(String(i)));
      await turn(); // the turn serves three frames
      expect(seen).toEqual(["a1", "a2", "a3", "a4"]);
      b.push(Buffer.from("1"));
      expect(seen).toHaveLength(4); // the last turn was busy: it waits
      await turn(); // this turn serves one
      expect(seen.at(-1)).toBe("b1");
      b.push(Buffer.from("2"));
      expect(seen.at(-1)).toBe("b2");
    });

    it("queues a frame read while a turn is served", async () => {
      const scheduler = new FrameScheduler(1, true);
      const seen: string[] = [];
      const c = inbox(scheduler, "c", seen).box;
      const a = new FrameInbox(
        scheduler,
        (data) => {
          seen.push(`a${data}`);
          if (String(data) === "2") {
            c.push(Buffer.from("1")); // read during the turn: waits for its round
            seen.push("after c1 pushed");
          }
        },
        { pause() {}, resume() {} },
        1_000,
      );
      a.push(Buffer.from("1"));
      a.push(Buffer.from("2"));
      a.push(Buffer.from("3"));
      await turn();
      expect(seen).toEqual(["a1", "a2", "after c1 pushed", "c1", "a3"]);
    });

    it("rethrows a handler's error after its callback and goes on taking frames", async () => {
      const scheduler = new FrameScheduler(1, true);
      const seen: string[] = [];
      await catchingUncaught(async (thrown) => {
        const bad = throwingInbox(scheduler, seen);
        bad.push(Buffer.from("boom"));
        await turn();
        bad.push(Buffer.from("2"));
        await turn();
        expect(seen).toEqual(["bad2"]);
        expect(thrown).toHaveLength(1);
      });
    });
  });
});
