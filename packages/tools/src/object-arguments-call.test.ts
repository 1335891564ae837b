import { describe, expect, it } from "vitest";
import { objectArgumentsCall } from "./object-arguments-call";

describe("objectArgumentsCall (the Node entry's calls)", () => {
  it("share one class, so every call made from object arguments has the same shape", () => {
    const a = objectArgumentsCall({ id: "a", name: "t", arguments: { x: 1 } });
    const b = objectArgumentsCall({
      id: "b",
      index: 1,
      name: "u",
      arguments: { y: "z" },
      argumentsError: "cut",
    } as never);
    expect(Object.getPrototypeOf(a)).toBe(Object.getPrototypeOf(b));
    expect(Object.keys(a as object)).toEqual(Object.keys(b as object));
    expect(b?.argumentsError).toBe("cut");
    expect(b?.index).toBe(1);
    // Anything else is toCall's to take, or to refuse with its reason.
    expect(objectArgumentsCall({ id: "c", name: "t", arguments: "{}" })).toBeUndefined();
    expect(objectArgumentsCall({ id: "c", name: "t", arguments: null as never })).toBeUndefined();
    expect(objectArgumentsCall({ id: "", name: "t", arguments: {} })).toBeUndefined();
    expect(
      objectArgumentsCall({ id: "c", name: "t", arguments: {}, rawArguments: "{}", index: 0 }),
    ).toBeUndefined();
  });
});
