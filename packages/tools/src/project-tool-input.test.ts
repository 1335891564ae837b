import type { NormalizedToolCall } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import { projectToolInput } from "./project-tool-input";

const call: NormalizedToolCall = {
  id: "call_1",
  index: 0,
  name: "get_weather",
  arguments: { city: "Berlin", stops: [{ code: "TXL" }, { code: "BER" }], units: "metric" },
  rawArguments: "{}",
};

const context = {
  user: { profile: { name: "Ada" }, private_note: "internal", id_list: ["u1", "u2"] },
  users: [{ id: "a" }, { id: "b" }],
  plan: "pro",
  empty: "",
  count: 0,
  reference: "ctx.user.private_note",
};

const resolve = (mapping: Parameters<typeof projectToolInput>[0]) =>
  projectToolInput(mapping, { call, context });

describe("projectToolInput", () => {
  it("selects arguments, call, names and ids", () => {
    expect(
      resolve({
        args: "arguments",
        city: "arguments.city",
        second: "arguments.stops.1.code",
        whole: "call",
        name_path: "call.name",
        name: "tool_name",
        id: "tool_call_id",
      }),
    ).toEqual({
      args: call.arguments,
      city: "Berlin",
      second: "BER",
      whole: call,
      name_path: "get_weather",
      name: "get_weather",
      id: "call_1",
    });
  });

  it("selects complete paths from context and nothing else", () => {
    expect(
      resolve({
        name: "ctx.user.profile.name",
        id: "ctx.user.id",
        first: "ctx.users.0.id",
        nested_index: "ctx.user.id_list.1",
        user: "ctx.user",
      }),
    ).toEqual({
      name: "Ada",
      id: null,
      first: "a",
      nested_index: "u2",
      user: context.user,
    });
  });

  it.each([
    ["a missing root", "ctx.nobody.id"],
    ["a missing field", "arguments.country"],
    ["an index out of range", "ctx.users.2.id"],
    ["a negative index", "ctx.users.-1.id"],
    ["a non-canonical index", "ctx.users.01.id"],
    ["an array property that is not an index", "ctx.users.length"],
    ["traversal through a scalar", "ctx.plan.length"],
    ["traversal through a string in arguments", "arguments.city.0"],
    ["an empty segment", "ctx.user..profile"],
    ["a trailing dot in ctx", "ctx.user."],
    ["a trailing dot in arguments", "arguments."],
    ["a trailing dot in call", "call."],
    ["a bare ctx dot", "ctx."],
    ["an inherited property", "ctx.user.toString"],
    ["__proto__", "ctx.__proto__"],
    ["constructor", "arguments.constructor"],
  ])("gives null for %s (%s), never a parent", (_label, reference) => {
    expect(resolve({ value: reference })).toEqual({ value: null });
  });

  it("gives a context key for any other string, else the literal", () => {
    expect(
      resolve({ plan: "plan", empty: "empty", count: "count", literal: "metric units", dotted: "user.id" }),
    ).toEqual({
      plan: "pro",
      empty: "",
      count: 0,
      literal: "metric units",
      dotted: "user.id",
    });
    expect(projectToolInput({ plan: "plan" }, { call })).toEqual({ plan: "plan" });
    expect(projectToolInput({ v: "ctx.plan" }, { call })).toEqual({ v: null });
  });

  it("never re-interprets a value selected from context", () => {
    expect(resolve({ v: "reference", w: "ctx.reference" })).toEqual({
      v: "ctx.user.private_note",
      w: "ctx.user.private_note",
    });
  });

  it("resolves objects and arrays recursively and passes numbers, booleans and null", () => {
    expect(
      resolve({
        where: { city: "arguments.city", codes: ["arguments.stops.0.code", "arguments.stops.1.code"] },
        retries: 3,
        strict: false,
        nothing: null,
        list: [1, true, null, "tool_name"],
      }),
    ).toEqual({
      where: { city: "Berlin", codes: ["TXL", "BER"] },
      retries: 3,
      strict: false,
      nothing: null,
      list: [1, true, null, "get_weather"],
    });
    expect(resolve("arguments.city")).toBe("Berlin");
  });

  it("keeps __proto__ keys as data and pollutes nothing", () => {
    const mapping = JSON.parse('{"__proto__": {"polluted": "arguments.city"}, "ok": "tool_name"}');
    const out = resolve(mapping) as Record<string, unknown>;
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(Object.hasOwn(out, "__proto__")).toBe(true);
    expect(Object.getOwnPropertyDescriptor(out, "__proto__")?.value).toEqual({ polluted: "Berlin" });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();

    const poisoned = JSON.parse('{"__proto__": {"admin": true}}');
    const args = projectToolInput({ a: "arguments" }, { call: { ...call, arguments: poisoned } }) as {
      a: Record<string, unknown>;
    };
    expect(Object.getPrototypeOf(args.a)).toBe(Object.prototype);
    expect(args.a.admin).toBeUndefined();
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
  });

  it("copies selected values so a handler cannot change the context", () => {
    const out = resolve({ user: "ctx.user" }) as { user: { profile: { name: string } } };
    out.user.profile.name = "Eve";
    expect(context.user.profile.name).toBe("Ada");
  });
});
