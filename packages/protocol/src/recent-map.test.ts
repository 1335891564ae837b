import { describe, expect, it } from "vitest";
import { RecentMap } from "./recent-map";

function filled(limit: number, count: number): RecentMap<number> {
  const map = new RecentMap<number>(limit);
  for (let i = 0; i < count; i++) map.set(`k${i}`, i);
  return map;
}

describe("RecentMap", () => {
  it("remembers every key up to its limit", () => {
    const map = filled(20, 20);
    expect(map.size).toBe(20);
    expect(map.get("k0")).toBe(0);
    expect(map.has("k19")).toBe(true);
    expect(map.has("k20")).toBe(false);
  });

  it("forgets the oldest tenth of its keys in one go past the limit", () => {
    const map = filled(20, 21);
    expect(map.size).toBe(19);
    expect(map.has("k0")).toBe(false);
    expect(map.has("k1")).toBe(false);
    expect([...map.keys()]).toEqual(Array.from({ length: 19 }, (_, i) => `k${i + 2}`));
  });

  it("never holds more than its limit, and forgets at least one key each time (tiny limits)", () => {
    const one = filled(1, 5);
    expect([...one.keys()]).toEqual(["k4"]);
    const two = filled(2, 3);
    expect([...two.keys()]).toEqual(["k1", "k2"]);
    const big = filled(1_000, 25_000);
    expect(big.size).toBeLessThanOrEqual(1_000);
    expect(big.size).toBeGreaterThanOrEqual(900);
    expect(big.get("k24999")).toBe(24_999);
  });

  it("set moves a known key to the young end, get does not", () => {
    const map = filled(3, 3);
    expect(map.get("k0")).toBe(0); // read only: k0 stays the oldest
    map.set("k1", 10); // rewritten: k1 becomes the youngest
    map.set("k3", 3);
    expect([...map.keys()]).toEqual(["k2", "k1", "k3"]);
    expect(map.get("k1")).toBe(10);
  });

  it("touch makes a key the most recent one (least recently used order)", () => {
    const map = filled(3, 3);
    expect(map.touch("k0")).toBe(true);
    expect(map.touch("nope")).toBe(false);
    map.set("k3", 3);
    expect([...map.keys()]).toEqual(["k2", "k0", "k3"]);
    expect(map.get("k0")).toBe(0);
  });

  it("delete and clear forget keys", () => {
    const map = filled(5, 3);
    expect(map.delete("k1")).toBe(true);
    expect(map.delete("k1")).toBe(false);
    expect([...map.keys()]).toEqual(["k0", "k2"]);
    map.clear();
    expect(map.size).toBe(0);
  });

  it("refuses a limit that is not a positive integer", () => {
    expect(() => new RecentMap(0)).toThrow("limit: must be a positive integer, got 0");
    expect(() => new RecentMap(1.5)).toThrow(/limit/);
    expect(() => new RecentMap(undefined as unknown as number)).toThrow(
      "limit: must be a positive integer, got undefined",
    );
    expect(() => new RecentMap("5" as unknown as number)).toThrow(
      'limit: must be a positive integer, got "5"',
    );
  });
});
