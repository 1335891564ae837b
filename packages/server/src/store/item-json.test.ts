import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { describe, expect, it } from "vitest";
import { GENERATION_CHARS, GENERATION_ITEMS, itemJson, keptItemTexts } from "./item-json";

/** An item whose serializations are counted (JSON.stringify calls `toJSON`). */
function counted(text = "x"): { item: object; made: () => number } {
  let made = 0;
  const item = Object.freeze({
    toJSON: () => {
      made++;
      return { type: "message", text };
    },
  });
  return { item, made: () => made };
}

describe("itemJson", () => {
  it("serializes a frozen item once and gives the same text after", () => {
    const { item, made } = counted();
    expect(itemJson(item)).toBe('{"type":"message","text":"x"}');
    expect(itemJson(item)).toBe('{"type":"message","text":"x"}');
    expect(made()).toBe(1);
  });

  it("serializes an item that is not frozen every time: it may still change", () => {
    const item: { text: string } = { text: "a" };
    expect(itemJson(item)).toBe('{"text":"a"}');
    item.text = "b";
    expect(itemJson(item)).toBe('{"text":"b"}');
  });

  it("keeps at most two generations of items, and one still used moves to the young one", () => {
    const first = counted("first");
    const used = counted("used");
    itemJson(first.item);
    itemJson(used.item);
    // Fill the rest of the young generation: the two above become the old one.
    for (let i = 0; i < GENERATION_ITEMS; i++) itemJson(Object.freeze({ i }));
    expect(keptItemTexts()).toBeLessThanOrEqual(2 * GENERATION_ITEMS);
    itemJson(used.item); // found in the old generation: kept in the young one
    for (let i = 0; i < GENERATION_ITEMS - 2; i++) itemJson(Object.freeze({ j: i }));
    itemJson(first.item);
    itemJson(used.item);
    expect(first.made()).toBe(2);
    expect(used.made()).toBe(1);
  });

  it("turns a generation over by characters too, so a few large items do not pile up", () => {
    const big = (c: string) => counted(c.repeat(Math.floor(GENERATION_CHARS / 3)));
    const [a, b, c, d, e] = ["a", "b", "c", "d", "e"].map(big);
    for (const x of [a!, b!, c!, d!, e!]) itemJson(x.item);
    // a and b made a generation, c and d the next; e began a third: a is gone, d is kept.
    itemJson(a!.item);
    itemJson(d!.item);
    expect(a!.made()).toBe(2);
    expect(d!.made()).toBe(1);
  });

  it("keeps no item alive: a text goes with its item", async () => {
    setFlagsFromString("--expose-gc");
    const gc = runInNewContext("gc") as () => void;
    const gone = (() => {
      const item = Object.freeze({ type: "message", text: "only the cache refers to me" });
      itemJson(item);
      return new WeakRef(item);
    })();
    // A WeakRef holds its target until the current job ends.
    await new Promise((resolve) => setTimeout(resolve, 0));
    gc();
    expect(gone.deref()).toBeUndefined();
  });
});
