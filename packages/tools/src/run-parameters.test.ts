import { describe, expect, it } from "vitest";
import { ALL_RUN_ARGUMENTS, runArgumentsRead } from "./run-parameters";

type Run = (...args: never[]) => unknown;
// A strict-mode function with exactly this source (a compiler would rewrite comments and spacing).
const strict = (source: string) => new Function(`"use strict"; return (${source});`)() as Run;

describe("runArgumentsRead", () => {
  it.each<[string, Run, number]>([
    ["no parameter", strict("() => 1"), 0],
    ["one parameter in parentheses", strict("(a) => a"), 1],
    ["one bare arrow parameter", strict("a => a"), 1],
    ["an async bare arrow parameter", strict("async a => a"), 1],
    ["an async arrow destructuring its arguments", strict("async ({ order_id }) => order_id"), 1],
    ["a trailing comma", strict("(a,\n) => a"), 1],
    ["a function expression", strict("function named(a) { return a }"), 1],
    ["an async generator function", strict("async function* g ( a ) {}"), 1],
    ["a method", strict("{ run(a) { return a } }.run"), 1],
    ["an async method with nested patterns", strict("{ async run({ a: [b, c] }) { return [b, c] } }.run"), 1],
    ["two parameters", strict("(a, b) => b"), 2],
    ["a pattern between names", strict("(a, { x, y: [z] }, c) => c"), 3],
    ["more than three parameters", strict("(a, b, c, d) => d"), ALL_RUN_ARGUMENTS],
    ["a compiled arrow", async ({ order_id }: { order_id: string }) => order_id, 1],
    ["a compiled function with two parameters", (_a: unknown, b: unknown) => b, 2],
  ])("counts %s", (_label, run, expected) => {
    expect(runArgumentsRead(run)).toBe(expected);
  });

  it.each<[string, Run]>([
    // Both have length 1 and still see the signal.
    ["a default value", strict("(a, signal = fallback) => signal")],
    ["a rest parameter", strict("(a, ...rest) => rest")],
    ["a default inside a pattern", strict("({ b = 1 }) => b")],
    ["`arguments` in the body", strict("function (a) { return arguments[1] }")],
    ["`arguments` in an arrow's body", strict("(a) => arguments")],
    ["`eval` in the body", strict("(a) => eval('a')")],
    ["a comment in the parameters", strict("(a /* , signal */) => a")],
    ["a string in a computed key", strict("({ ['x']: y }) => y")],
    ["a bound function (its source is hidden)", ((a: unknown) => a).bind(null) as Run],
    ["a proxied function", new Proxy((a: unknown) => a, {}) as Run],
    ["a native function", Math.max as Run],
    // A sloppy function's arguments can be read from outside it (`run.arguments`).
    ["a sloppy function", new Function("a", "return a") as Run],
    ["a class", strict("class { constructor(a) {} }")],
  ])("counts everything for %s", (_label, run) => {
    expect(runArgumentsRead(run)).toBe(ALL_RUN_ARGUMENTS);
  });
});
