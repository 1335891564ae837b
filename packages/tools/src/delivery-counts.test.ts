import { describe, expect, it } from "vitest";
import { DeliveryCounts } from "./delivery-counts";

describe("DeliveryCounts", () => {
  it("counts each id's deliveries", () => {
    const counts = new DeliveryCounts(10);
    expect(counts.count("a")).toBe(1);
    expect(counts.count("b")).toBe(1);
    expect(counts.count("a")).toBe(2);
    counts.raise("a", 5);
    expect(counts.count("a")).toBe(6);
  });

  it("remembers at least the last `limit` ids, and forgets older generations whole", () => {
    const filled = () => {
      const counts = new DeliveryCounts(10);
      for (let i = 0; i < 95; i++) counts.count(`c${i}`);
      return counts;
    };
    for (let i = 85; i < 95; i++) expect(filled().count(`c${i}`)).toBe(2);
    expect(filled().count("c0")).toBe(1);
    expect(filled().count("c70")).toBe(1);
  });
});
