import type { ToolSpec } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import { PageToolRegistry } from "./page-tool-registry";

const tool = (name: string, description = name): ToolSpec => ({
  name,
  description,
  parameters: { type: "object", properties: {} },
});

describe("PageToolRegistry", () => {
  it("offers the union of the attached pages, the first declaration of a name winning", () => {
    const registry = new PageToolRegistry();
    expect(registry.set("k_1", [tool("a", "from k_1")])).toEqual([tool("a", "from k_1")]);
    const union = registry.set("k_2", [tool("a", "from k_2"), tool("b")]);
    expect(union?.map((t) => [t.name, t.description])).toEqual([
      ["a", "from k_1"],
      ["b", "b"],
    ]);
    expect(registry.has("b")).toBe(true);
  });

  it("asks to store the union only when it changed", () => {
    const registry = new PageToolRegistry([tool("a")]);
    // The same set as stored: nothing to write.
    expect(registry.set("k_1", [tool("a")])).toBeUndefined();
    expect(registry.set("k_2", [tool("a")])).toBeUndefined();
    expect(registry.set("k_2", [tool("a"), tool("c")])).toHaveLength(2);
  });

  it("keeps offering the last set while no page is attached, but has() no tool", () => {
    const registry = new PageToolRegistry();
    registry.set("k_1", [tool("a")]);
    expect(registry.set("k_1", [])).toBeUndefined();
    expect(registry.specs().map((t) => t.name)).toEqual(["a"]);
    expect(registry.has("a")).toBe(false);
    // Starting from what the store kept, before any page attached.
    expect(new PageToolRegistry([tool("z")]).specs().map((t) => t.name)).toEqual(["z"]);
  });

  it("hands out the same list while the attached pages' tools stay the same", () => {
    const registry = new PageToolRegistry();
    registry.set("k_1", [tool("a")]);
    registry.set("k_2", [tool("a", "again"), tool("b")]);
    const offered = registry.specs();
    expect(offered.map((t) => [t.name, t.description])).toEqual([
      ["a", "a"],
      ["b", "b"],
    ]);
    // The turn keeps its offered list while this array stays the same (turn-loop.ts).
    expect(registry.specs()).toBe(offered);
    expect(registry.set("k_2", [tool("a", "again"), tool("b")])).toBeUndefined();
    expect(registry.specs()).toBe(offered);
    registry.set("k_2", [tool("c")]);
    expect(registry.specs()).not.toBe(offered);
    expect(registry.specs().map((t) => t.name)).toEqual(["a", "c"]);
  });
});
