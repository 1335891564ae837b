import { describe, expect, it } from "vitest";
import { canonicalJson, hashArguments } from "./hash-arguments";

describe("hashArguments", () => {
  it("ignores key order at every depth", () => {
    const a = { flight_id: "LH400", seats: 2, passenger: { first: "Ada", last: "Lovelace" } };
    const b = { passenger: { last: "Lovelace", first: "Ada" }, seats: 2, flight_id: "LH400" };
    expect(hashArguments(a)).toBe(hashArguments(b));
    expect(hashArguments(a)).toMatch(/^[0-9a-f]{16}$/);
  });

  it("changes with any value, and with array order", () => {
    const base = hashArguments({ seats: 2, list: [1, 2] });
    expect(hashArguments({ seats: 3, list: [1, 2] })).not.toBe(base);
    expect(hashArguments({ seats: 2, list: [2, 1] })).not.toBe(base);
    expect(hashArguments({ seats: "2", list: [1, 2] })).not.toBe(base);
  });

  it("writes canonical JSON that keeps __proto__ as a key", () => {
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: 3 }], u: undefined })).toBe('{"a":[{"c":3,"d":2}],"b":1}');
    expect(canonicalJson(JSON.parse('{"z":1,"__proto__":{"x":1}}'))).toBe('{"__proto__":{"x":1},"z":1}');
    expect(hashArguments(JSON.parse('{"__proto__":{"x":1}}'))).not.toBe(hashArguments({}));
  });
});
