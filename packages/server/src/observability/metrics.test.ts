import { describe, expect, it } from "vitest";
import { PAGE_TOOL_LABELS, ServerMetrics } from "./metrics";

describe("ServerMetrics.toolLabel", () => {
  it("keeps the series of tool calls bounded whatever names users make up", async () => {
    const metrics = new ServerMetrics();
    for (let i = 0; i < PAGE_TOOL_LABELS + 50; i++) {
      const tool = metrics.toolLabel(`page_tool_${i}`, "page", "completed");
      metrics.toolCalls.inc({ tool, location: "page", outcome: "completed" });
      const unknown = metrics.toolLabel(`made_up_${i}`, "server", "unknown_tool");
      metrics.toolCalls.inc({ tool: unknown, location: "server", outcome: "unknown_tool" });
    }
    // The operator's own tools keep their names, however many page tools came first.
    expect(metrics.toolLabel("lookup_order", "server", "completed")).toBe("lookup_order");
    expect(metrics.toolLabel("book", "worker", "failed")).toBe("book");
    // A page tool that has its label keeps it.
    expect(metrics.toolLabel("page_tool_3", "page", "failed")).toBe("page_tool_3");
    const text = await metrics.registry.metrics();
    const series = text.split("\n").filter((line) => line.startsWith("patchbay_tool_calls_total{"));
    expect(series).toHaveLength(PAGE_TOOL_LABELS + 2);
    expect(text).toContain('tool="(other page tool)"');
    expect(text).toContain('tool="(unknown)"');
    expect(text).not.toContain("made_up_");
  });
});
