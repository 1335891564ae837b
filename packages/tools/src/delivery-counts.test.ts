import { describe, expect, it } from "vitest";
import { DeliveryCounts } from "./delivery-counts";

describe("DeliveryCounts", () => {
  it("keeps each id's count", () => {
    const counts = new DeliveryCounts(10);
    expect(counts.get("a")).toBeUndefined();
    counts.set("a", 1);
    counts.set("b", 1);
    counts.set("a", 5);
    expect(counts.get("a")).toBe(5);
    expect(counts.get("b")).toBe(1);
  });

  it("remembers at least the last `limit` ids, and forgets older generations whole", () => {
    const counts = new DeliveryCounts(10);
    for (let i = 0; i < 95; i++) counts.set(`c${i}`, i);
    // 90..94 are young, 80..89 old; everything before went with its generation.
    for (let i = 85; i < 95; i++) expect(counts.get(`c${i}`)).toBe(i);
    expect(counts.get("c0")).toBeUndefined();
    expect(counts.get("c70")).toBeUndefined();
    // A remembered old id set again is young: it outlives the next turnover.
    counts.set("c80", 1);
    for (let i = 95; i < 105; i++) counts.set(`c${i}`, i);
    expect(counts.get("c80")).toBe(1);
    expect(counts.get("c81")).toBeUndefined();
  });
});
