import { describe, expect, it } from "vitest";
import { acquire, Semaphore } from "./semaphore";

// How many slots are free: taken one by one, then given back.
function freeSlots(slots: Semaphore): number {
  const taken: (() => void)[] = [];
  for (let release = slots.tryAcquire(); release; release = slots.tryAcquire()) taken.push(release);
  for (const release of taken) release();
  return taken.length;
}

describe("Semaphore", () => {
  it("serves waiters in order and hands a freed slot to the next one", async () => {
    const slots = new Semaphore(1);
    const order: string[] = [];
    const first = await acquire(slots);
    const b = acquire(slots).then((release) => {
      order.push("b");
      return release;
    });
    const c = acquire(slots).then((release) => {
      order.push("c");
      return release;
    });
    expect(slots.waiting).toBe(2);
    first();
    first(); // a second call gives nothing back
    (await b)();
    (await c)();
    expect(order).toEqual(["b", "c"]);
    expect(freeSlots(slots)).toBe(1);
  });

  it("tryAcquire takes a free slot at once, and never one that a waiter is queued for", async () => {
    const slots = new Semaphore(1);
    const first = slots.tryAcquire();
    expect(first).toBeTypeOf("function");
    expect(slots.tryAcquire()).toBeUndefined();
    const waiting = acquire(slots);
    first!(); // the slot passes straight to the waiter
    expect(slots.tryAcquire()).toBeUndefined();
    (await waiting)();
    expect(freeSlots(slots)).toBe(1);
    expect(slots.tryAcquire()).toBeTypeOf("function");
  });

  it("drops a waiter whose signal aborts", async () => {
    const slots = new Semaphore(1);
    const held = await acquire(slots);
    const controller = new AbortController();
    const waiting = acquire(slots, controller.signal);
    controller.abort(new Error("gone"));
    await expect(waiting).rejects.toThrow("gone");
    expect(slots.waiting).toBe(0);
    held();
    expect(freeSlots(slots)).toBe(1);
    await expect(acquire(slots, AbortSignal.abort(new Error("late")))).rejects.toThrow("late");
  });
});
