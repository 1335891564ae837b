import { describe, expect, it } from "vitest";
import { ToolsError } from "./errors";
import { toObjectArgumentsCall } from "./object-arguments-call";
import { toCall as plainToCall } from "./tool-call-input";

// As a page makes calls, and as the Node entry does (object arguments make one class).
describe.each([
  ["toCall", plainToCall],
  ["the Node entry's toCall", toObjectArgumentsCall],
])("%s", (_name, toCall) => {
  it("parses the model's JSON text and keeps it as rawArguments", () => {
    expect(toCall({ id: "c1", name: "t", arguments: '{"city":"Berlin"}' })).toEqual({
      id: "c1",
      index: 0,
      name: "t",
      arguments: { city: "Berlin" },
      rawArguments: '{"city":"Berlin"}',
    });
  });

  it("takes arguments given as an object as they are, their JSON text made only when read", () => {
    const args = { city: "Berlin" };
    const call = toCall({ id: "c1", name: "weather", arguments: args });
    expect(call.arguments).toBe(args);
    expect(call.argumentsError).toBeUndefined();
    expect(call.rawArguments).toBe('{"city":"Berlin"}');
  });

  it("takes a normalized call as it is", () => {
    const call = { id: "c1", index: 3, name: "t", arguments: { a: 1 }, rawArguments: '{"a":1}' };
    expect(toCall(call)).toBe(call);
  });

  it("turns unreadable arguments into argumentsError instead of throwing", () => {
    const call = toCall({ id: "c1", name: "t", arguments: "{not json" });
    expect(call.arguments).toEqual({});
    expect(call.argumentsError).toEqual(expect.any(String));
  });

  it("keeps an argumentsError the caller already found", () => {
    expect(toCall({ id: "c1", name: "t", arguments: {}, argumentsError: "truncated" }).argumentsError).toBe(
      "truncated",
    );
  });

  it("throws invalid_tool_call naming the field for a call without an id or a name", () => {
    expect(() => toCall({ id: "", name: "t" })).toThrow(/^id: /);
    expect(() => toCall({ id: "c1", name: "" })).toThrow(/^name: tool call c1/);
    expect(() => toCall(null as never)).toThrow(ToolsError);
  });

  it("takes an index and arguments of every shape", () => {
    expect(toCall({ id: "c1", index: 2, name: "t", arguments: { a: 1 } } as never)).toMatchObject({
      index: 2,
      rawArguments: '{"a":1}',
    });
    expect(toCall({ id: "c1", name: "t" })).toMatchObject({ arguments: {}, rawArguments: "{}" });
    expect(toCall({ id: "c1", name: "t", arguments: [1] as never }).argumentsError).toMatch(/array/);
  });
});
