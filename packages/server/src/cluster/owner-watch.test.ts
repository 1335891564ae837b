import { describe, expect, it } from "vitest";
import type { BusTimeoutError } from "../errors";
import type { Bus } from "./bus";
import { pingSubject } from "./cluster-node";
import { MemoryBusHub } from "./memory-bus";
import { watchOwner } from "./owner-watch";

// The watch of a node some answer is waited for, on the in-process bus: gone is told once and only
// when nothing listens on its ping subject; a ping answered or unanswered leads to the next one.
// Bounds are loose on purpose: the suite runs on two busy cores, where a timer may fire late.
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const until = async (check: () => boolean) => {
  for (let i = 0; i < 300 && !check(); i++) await sleep(10);
  expect(check()).toBe(true);
};

function nodes() {
  const hub = new MemoryBusHub();
  return { edge: hub.connect(), owner: hub.connect() };
}

function watch(bus: Bus, firstAfterMs: number, everyMs: number) {
  const gone: { at: number; error: BusTimeoutError }[] = [];
  const started = Date.now();
  const stop = watchOwner(bus, "n_owner", {
    firstAfterMs,
    everyMs,
    onGone: (error) => gone.push({ at: Date.now() - started, error }),
  });
  return { gone, stop };
}

describe("watchOwner", () => {
  it("says gone at once when nothing listens on the node's ping subject", async () => {
    const { edge } = nodes();
    const { gone, stop } = watch(edge, 0, 10_000);
    await until(() => gone.length > 0);
    // Told by the bus, not after a ping's wait.
    expect(gone[0]!.at).toBeLessThan(5_000);
    expect(gone[0]!.error).toMatchObject({ code: "bus_timeout", noResponders: true });
    stop();
  });

  it("keeps asking a node that answers, and says gone once it left the bus, once", async () => {
    const { edge, owner } = nodes();
    let pings = 0;
    const leave = owner.subscribe(pingSubject("n_owner"), (message) => {
      pings += 1;
      message.reply("");
    });
    const { gone, stop } = watch(edge, 30, 30);
    await Promise.resolve();
    expect(pings).toBe(0); // the first ping waits `firstAfterMs`
    await until(() => pings >= 3);
    expect(gone).toEqual([]);
    leave();
    await until(() => gone.length > 0);
    await sleep(100);
    expect(gone).toHaveLength(1);
    stop();
  });

  it("asks again after a ping nobody answered (a connection nats-server had not found dead yet)", async () => {
    const { edge, owner } = nodes();
    // Subscribed but silent, as a crashed process nats-server still routes to, then gone.
    let pings = 0;
    const leave = owner.subscribe(pingSubject("n_owner"), () => {
      pings += 1;
    });
    const { gone, stop } = watch(edge, 0, 40);
    await until(() => pings >= 2);
    expect(gone).toEqual([]);
    leave();
    await until(() => gone.length > 0);
    expect(gone[0]!.error).toMatchObject({ noResponders: true });
    stop();
  });

  it("asks nothing more once stopped, and never says gone after", async () => {
    const { edge, owner } = nodes();
    let pings = 0;
    const leave = owner.subscribe(pingSubject("n_owner"), (message) => {
      pings += 1;
      message.reply("");
    });
    const { gone, stop } = watch(edge, 0, 20);
    await sleep(50);
    stop();
    const asked = pings;
    expect(asked).toBeGreaterThanOrEqual(2);
    leave();
    await sleep(80);
    expect(pings).toBe(asked);
    expect(gone).toEqual([]);
  });

  it("waits between pings a bus refuses at once (while it closes) rather than spinning", async () => {
    const asked: number[] = [];
    const refusing = {
      request: () => {
        asked.push(Date.now());
        return Promise.reject(new Error("the bus is closed"));
      },
    } as unknown as Bus;
    const { gone, stop } = watch(refusing, 0, 50);
    await until(() => asked.length >= 2);
    stop();
    expect(asked[1]! - asked[0]!).toBeGreaterThanOrEqual(45);
    expect(gone).toEqual([]);
  });
});
