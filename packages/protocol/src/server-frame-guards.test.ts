// Keeps the zod-free guards of decodeServerFrame in step with the zod schemas: both must agree on
// every shared vector of the server -> client channel, and on thousands of mutations of the
// valid ones (each field removed, or replaced by a value of every other JSON kind, an empty or a
// too-long string, zero, a negative or a fractional number), down to nested fields.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { decodeFrame, knownTypes, ToolApprovalSpecSchema } from "./index";
import { checkToolApprovalSpec, decodeServerFrame, SERVER_FRAME_TYPES } from "./server-frame-guards";
import { mutate, paths, REMOVE, REPLACEMENTS } from "./test-support/frame-mutations";

interface Vector {
  name: string;
  channel: string;
  frame?: unknown;
  text?: string;
  maxBytes?: number;
  decoded?: unknown;
  error?: { code: string; path: string | null };
}
const load = (file: string): Vector[] =>
  (JSON.parse(readFileSync(join(import.meta.dirname, "../vectors", file), "utf8")) as { vectors: Vector[] })
    .vectors;
const valid = load("frames.valid.json").filter((v) => v.channel === "server-to-client");
const invalid = load("frames.invalid.json").filter((v) => v.channel === "server-to-client");
const textOf = (v: Vector) => v.text ?? JSON.stringify(v.frame);

function both(text: string, maxBytes?: number) {
  const zod = decodeFrame(text, { channel: "server-to-client", maxBytes });
  const lite = decodeServerFrame(text, { maxBytes });
  return { zod, lite };
}

function agree(text: string, label: string): boolean {
  const { zod, lite } = both(text);
  if (zod.ok) {
    expect(lite.ok, `${label}: zod decodes, the guards refuse (${lite.ok ? "" : lite.error.message})`).toBe(
      true,
    );
    if (lite.ok) expect(lite.frame, label).toEqual(zod.frame);
  } else {
    expect(lite.ok, `${label}: zod refuses (${zod.error.message}), the guards decode`).toBe(false);
    if (!lite.ok) {
      expect({ code: lite.error.code, path: lite.error.path ?? null }, label).toEqual({
        code: zod.error.code,
        path: zod.error.path ?? null,
      });
      expect(lite.error.message, label).toContain(`invalid '`);
    }
  }
  return zod.ok;
}

describe("decodeServerFrame", () => {
  it("knows exactly the frame types zod knows on the server -> client channel", () => {
    expect([...SERVER_FRAME_TYPES].sort()).toEqual([...knownTypes("server-to-client")].sort());
  });

  it.each(valid.map((v) => [v.name, v] as const))("decodes the valid vector: %s", (_name, vector) => {
    const result = decodeServerFrame(textOf(vector), { maxBytes: vector.maxBytes });
    if (!result.ok) throw new Error(`expected to decode, got ${result.error.code}: ${result.error.message}`);
    expect(result.frame).toEqual(vector.decoded ?? vector.frame);
  });

  it.each(invalid.map((v) => [v.name, v] as const))("refuses the invalid vector: %s", (_name, vector) => {
    const result = decodeServerFrame(textOf(vector), { maxBytes: vector.maxBytes });
    if (result.ok) throw new Error(`expected ${vector.error!.code}, but it decoded`);
    expect({ code: result.error.code, path: result.error.path ?? null }).toEqual(vector.error);
  });

  it("agrees with the zod schemas on every mutation of every valid vector", () => {
    let refused = 0;
    let accepted = 0;
    for (const vector of valid.filter((v) => v.frame !== undefined)) {
      for (const path of paths(vector.frame).filter((p) => p[0] !== "type")) {
        for (const replacement of [REMOVE, ...REPLACEMENTS]) {
          const label = `${vector.name}: ${path.join(".")} ${replacement === REMOVE ? "removed" : `= ${JSON.stringify(replacement)}`}`;
          if (agree(JSON.stringify(mutate(vector.frame, path, replacement)), label)) accepted++;
          else refused++;
        }
      }
    }
    // Both outcomes are exercised many times, so agreement is not trivial.
    expect(refused).toBeGreaterThan(500);
    expect(accepted).toBeGreaterThan(100);
  });

  it("fills defaults and drops unknown fields like zod", () => {
    const frame = {
      type: "conversation.updated",
      sessionId: "s_1",
      seq: 3,
      extra: 1,
      item: {
        type: "tool_call",
        id: "call_1",
        name: "search",
        arguments: { q: "x" },
        status: "completed",
        held: false,
        attempt: 1,
        createdAt: 1,
        result: { outcome: "completed", content: { text: "ok" }, surprise: true },
      },
    };
    const { zod, lite } = both(JSON.stringify(frame));
    expect(lite).toEqual(zod);
    expect(lite.ok && lite.frame.type === "conversation.updated" && lite.frame.item).toMatchObject({
      result: { content: { text: "ok", images: [] } },
    });
  });

  it("says which field is wrong, and why", () => {
    const result = decodeServerFrame(
      JSON.stringify({
        type: "text.delta",
        sessionId: "s_1",
        seq: 1,
        responseId: "r_1",
        itemId: "m_1",
        delta: 5,
      }),
    );
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.code).toBe("invalid_frame");
      expect(result.error.path).toBe("delta");
      expect(result.error.message).toBe("invalid 'text.delta' frame: delta: expected a string, got a number");
    }
  });
});

describe("checkToolApprovalSpec", () => {
  const specs: unknown[] = [
    { title: "Share?" },
    { title: "" },
    { title: "Share?", reasonArgument: "" },
    { title: "Share?", allowTitle: "Yes", declineTitle: "No", expiresInMs: 1000, extra: 1 },
    { title: "Share?", expiresInMs: 0 },
    { title: "Share?", expiresInMs: 1.5 },
    { title: 3 },
    {},
    null,
    [],
  ];
  it.each(specs.map((s) => [JSON.stringify(s), s] as const))(
    "agrees with ToolApprovalSpecSchema on %s",
    (_l, spec) => {
      const zod = ToolApprovalSpecSchema.safeParse(spec);
      const lite = checkToolApprovalSpec(spec);
      expect(lite.ok).toBe(zod.success);
      if (zod.success && lite.ok) expect(lite.value).toEqual(zod.data);
      if (!zod.success && !lite.ok) expect(lite.path).toBe((zod.error.issues[0]?.path ?? []).join("."));
    },
  );
});
