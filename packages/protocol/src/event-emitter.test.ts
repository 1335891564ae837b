import { EventEmitter as EventEmitter3 } from "eventemitter3";
import { describe, expect, it } from "vitest";
import { EventEmitter } from "./event-emitter";

type Emitter = {
  on(event: string, fn: (...args: any[]) => void, context?: unknown): unknown;
  once(event: string, fn: (...args: any[]) => void, context?: unknown): unknown;
  off(event: string, fn?: (...args: any[]) => void, context?: unknown, once?: boolean): unknown;
  addListener(event: string, fn: (...args: any[]) => void, context?: unknown): unknown;
  removeListener(event: string, fn?: (...args: any[]) => void, context?: unknown, once?: boolean): unknown;
  removeAllListeners(event?: string): unknown;
  emit(event: string, ...args: unknown[]): boolean;
  listenerCount(event: string): number;
  listeners(event: string): unknown[];
  eventNames(): unknown[];
};

/**
 * One script of everything the API allows, tricky cases included (listeners added and removed
 * during an emit, once, contexts, the same function twice), run against an emitter: the log of
 * what was called, with what, on which `this`, and what each call returned.
 */
function script(emitter: Emitter): unknown[] {
  const log: unknown[] = [];
  const ctx = { name: "ctx" };
  function a(this: unknown, ...args: unknown[]) {
    log.push(["a", this === emitter ? "emitter" : this, args]);
  }
  function b(this: unknown, ...args: unknown[]) {
    log.push(["b", this === emitter ? "emitter" : this, args]);
  }
  const late = () => log.push("late");
  const remover = () => {
    log.push("remover");
    emitter.off("x", b);
    emitter.on("x", late);
  };
  log.push(emitter.emit("x", 1));
  emitter.on("x", a);
  emitter.on("x", remover);
  emitter.on("x", b);
  emitter.once("x", a, ctx);
  log.push(emitter.listenerCount("x"), emitter.listeners("x").length);
  log.push(emitter.emit("x", 1, 2, 3, 4, 5, 6));
  log.push(emitter.emit("x"));
  emitter.addListener("y", b, ctx);
  emitter.on("y", b);
  emitter.off("y", b, ctx);
  log.push(emitter.emit("y", "once more"));
  emitter.once("z", a);
  emitter.on("z", a);
  emitter.off("z", a, undefined, true);
  log.push(emitter.emit("z"), emitter.listenerCount("z"));
  log.push([...emitter.eventNames()].sort());
  emitter.removeListener("x");
  log.push(emitter.listenerCount("x"), emitter.emit("x"));
  emitter.removeAllListeners("y");
  log.push(emitter.listenerCount("y"), emitter.listenerCount("z"));
  emitter.removeAllListeners();
  log.push(emitter.eventNames(), emitter.emit("z"));
  try {
    emitter.on("x", "not a function" as never);
  } catch (error) {
    log.push((error as Error).message);
  }
  return log;
}

describe("EventEmitter", () => {
  it("behaves as eventemitter3 does, case for case", () => {
    const ours = script(new EventEmitter() as unknown as Emitter);
    const theirs = script(new EventEmitter3() as unknown as Emitter);
    expect(ours).toEqual(theirs);
    expect(ours.length).toBeGreaterThan(15);
  });

  it("types listeners by the event map, in the tuple and the function form", () => {
    const tuples = new EventEmitter<{ opened: [by: string, at: number] }>();
    const seen: string[] = [];
    tuples.on("opened", (by, at) => seen.push(`${by}@${at}`)).emit("opened", "Ada", 3);
    const functions = new EventEmitter<{ closed: (reason: string) => void }>();
    functions.once("closed", (reason) => seen.push(reason));
    functions.emit("closed", "bye");
    functions.emit("closed", "again");
    expect(seen).toEqual(["Ada@3", "bye"]);
  });
});
