// Keeps the guard decodeFrame reads a `tool.result` with in step with ClientToolResultFrameSchema:
// on every shared vector of the frame and thousands of mutations of the valid ones, decodeFrame
// (the guard, zod for a frame it refuses) answers exactly what the zod schema alone answers.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ClientToolResultFrameSchema, decodeFrame, ToolOutcomeSchema } from "./index";
import { mutate, paths, REMOVE, REPLACEMENTS } from "./test-support/frame-mutations";
import { guardedToolResult } from "./tool-result-frame";

interface Vector {
  name: string;
  channel: string;
  frame?: { type?: string };
}
const load = (file: string): Vector[] =>
  (JSON.parse(readFileSync(join(import.meta.dirname, "../vectors", file), "utf8")) as { vectors: Vector[] })
    .vectors;
const ofToolResult = (v: Vector) => v.channel === "client-to-server" && v.frame?.type === "tool.result";
const valid = load("frames.valid.json").filter(ofToolResult);
const invalid = load("frames.invalid.json").filter(ofToolResult);

/** Whether decodeFrame and the zod schema agree on `frame`; returns whether zod took it. */
function agree(frame: unknown, label: string): boolean {
  const zod = ClientToolResultFrameSchema.safeParse(frame);
  const guarded = guardedToolResult(frame);
  const decoded = decodeFrame(JSON.stringify(frame), { channel: "client-to-server" });
  if (zod.success) {
    expect(guarded, `${label}: zod decodes, the guard refuses`).toEqual(zod.data);
    expect(decoded, label).toEqual({ ok: true, frame: zod.data });
  } else {
    expect(guarded, `${label}: zod refuses, the guard decodes`).toBeUndefined();
    expect(decoded.ok, label).toBe(false);
  }
  return zod.success;
}

describe("guardedToolResult", () => {
  it("has shared vectors to check against", () => {
    expect(valid.length).toBeGreaterThan(1);
    expect(invalid.length).toBeGreaterThan(1);
  });

  it("agrees with the zod schema on every shared tool.result vector", () => {
    for (const vector of [...valid, ...invalid]) agree(vector.frame, vector.name);
  });

  it("agrees with the zod schema on every mutation of every valid tool.result vector", () => {
    let refused = 0;
    let accepted = 0;
    for (const vector of valid) {
      for (const path of paths(vector.frame)) {
        for (const replacement of [REMOVE, ...REPLACEMENTS]) {
          const label = `${vector.name}: ${path.join(".")} ${replacement === REMOVE ? "removed" : `= ${JSON.stringify(replacement)}`}`;
          if (agree(mutate(vector.frame, path, replacement), label)) accepted++;
          else refused++;
        }
      }
    }
    // Both outcomes are exercised many times, so agreement is not trivial.
    expect(refused).toBeGreaterThan(100);
    expect(accepted).toBeGreaterThan(10);
  });

  it("takes every outcome ToolOutcomeSchema names, and no other (the guard spells the list out, so a page's bundle carries no zod schema for it)", () => {
    const frame = (outcome: string) => ({
      type: "tool.result",
      sessionId: "s_1",
      callId: "call_1",
      attempt: 1,
      result: { outcome, content: { text: "ok" } },
    });
    for (const outcome of ToolOutcomeSchema.options) expect(agree(frame(outcome), outcome)).toBe(true);
    expect(agree(frame("abandoned"), "abandoned")).toBe(false);
  });

  it("drops unknown fields and fills the images default like zod", () => {
    const frame = {
      type: "tool.result",
      sessionId: "s_1",
      callId: "call_1",
      attempt: 2,
      extra: true,
      result: { outcome: "completed", content: { text: "ok" }, surprise: 1 },
    };
    expect(guardedToolResult(frame)).toEqual({
      type: "tool.result",
      sessionId: "s_1",
      callId: "call_1",
      attempt: 2,
      result: { outcome: "completed", content: { text: "ok", images: [] } },
    });
    expect(guardedToolResult(frame)).toEqual(ClientToolResultFrameSchema.parse(frame));
  });

  it("leaves the error of a frame it refuses to zod: the path of the wrong field", () => {
    const decoded = decodeFrame(
      JSON.stringify({ type: "tool.result", sessionId: "s_1", callId: "call_1", attempt: 0, result: {} }),
      { channel: "client-to-server" },
    );
    expect(decoded.ok).toBe(false);
    if (!decoded.ok) expect(decoded.error).toMatchObject({ code: "invalid_frame", path: "attempt" });
  });
});
