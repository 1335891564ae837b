import { describe, expect, it } from "vitest";
import { DispatchMetrics } from "./dispatch-metrics";

describe("DispatchMetrics", () => {
  it("shows the hosted calls counted with countOffered on every read, added to the counter's own", async () => {
    const metrics = new DispatchMetrics();
    const offered = async () =>
      (await metrics.hostedCalls.get()).values.find((v) => v.labels.event === "offered")?.value;
    expect(await offered()).toBeUndefined();
    for (let i = 0; i < 3; i++) metrics.countOffered();
    expect(await metrics.registry.metrics()).toMatch(
      /patchbay_dispatch_hosted_calls_total\{event="offered"\} 3/,
    );
    metrics.hostedCalls.inc({ event: "offered" });
    metrics.countOffered();
    metrics.countOffered();
    expect(await offered()).toBe(6);
    expect(await offered()).toBe(6);
  });
});
