// Keeps the in-place checks decodeFrame reads `hosted.call` and `hosted.result` with in step with
// their zod schemas: on every shared vector of the two frames and thousands of mutations of the
// valid ones (and of the same with a field added anywhere), decodeFrame answers exactly what the
// zod schema alone answers, and a check that takes a frame gives back what zod gives back. A
// frame whose conversation holds every kind of item (richCall) is checked and mutated beside them.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { checkedHostedCall, checkedHostedResult } from "./hosted-frame-checks";
import { decodeFrame, HostedCallFrameSchema, HostedResultFrameSchema } from "./index";
import { mutate, paths, REMOVE, REPLACEMENTS } from "./test-support/frame-mutations";

interface Vector {
  name: string;
  channel: string;
  frame?: { type?: string; [field: string]: unknown };
}
const load = (file: string): Vector[] =>
  (JSON.parse(readFileSync(join(import.meta.dirname, "../vectors", file), "utf8")) as { vectors: Vector[] })
    .vectors;

/**
 * A `hosted.call` whose conversation holds every field of both kinds of item, beside the shared
 * vectors (whose items hold fewer): plain items the checks take, and items with images they leave
 * to zod, before and after plain ones.
 */
const richCall: Vector = {
  name: "hosted.call with every kind of conversation item",
  channel: "server-to-worker",
  frame: {
    type: "hosted.call",
    callId: "call_2",
    attempt: 1,
    agent: "support",
    sessionId: "s_1",
    tool: "lookup_order",
    arguments: { order_id: "A1" },
    user: { id: "u_1", name: "Ada" },
    conversation: [
      { type: "message", id: "m_1", role: "user", text: "Hi", images: [], status: "completed", createdAt: 0 },
      {
        type: "message",
        id: "m_2",
        role: "user",
        text: "This one",
        images: [{ type: "image", url: "https://example.com/a.png" }],
        status: "completed",
        createdAt: 1,
      },
      {
        type: "tool_call",
        id: "call_1",
        providerCallId: "toolu_1",
        name: "lookup_order",
        arguments: { order_id: "A1", nested: { list: [1, "two", null] } },
        location: "worker",
        displayTitle: "Looking up",
        status: "failed",
        progress: "",
        held: true,
        attempt: 2,
        result: {
          outcome: "failed",
          content: { text: "no such order", images: [] },
          error: { code: "not_found", message: "no such order", path: "order_id" },
          held: false,
        },
        lateResult: { outcome: "completed", content: { text: "late", images: [] } },
        responseId: "r_1",
        createdAt: 2,
      },
      {
        type: "tool_call",
        id: "call_3",
        name: "photo",
        arguments: {},
        status: "completed",
        held: false,
        attempt: 1,
        result: {
          outcome: "completed",
          content: { text: "", images: [{ type: "image", mimeType: "image/png", data: "AAAA" }] },
        },
        createdAt: 3,
      },
      {
        type: "message",
        id: "m_3",
        role: "assistant",
        text: "Done",
        status: "interrupted",
        responseId: "r_1",
        createdAt: 4,
      },
    ],
    timeoutMs: 1,
    conversationTrimmed: true,
  },
};

const kinds = [
  {
    type: "hosted.result",
    channel: "worker-to-server",
    schema: HostedResultFrameSchema,
    check: checkedHostedResult,
    extra: [] as Vector[],
  },
  {
    type: "hosted.call",
    channel: "server-to-worker",
    schema: HostedCallFrameSchema,
    check: checkedHostedCall,
    extra: [richCall],
  },
] as const;

/** Every object inside a JSON value, by path (the value itself at []). */
function objectPaths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(value)) return value.flatMap((v, i) => objectPaths(v, [...prefix, i]));
  if (typeof value !== "object" || value === null) return [];
  return [prefix, ...Object.entries(value).flatMap(([k, v]) => objectPaths(v, [...prefix, k]))];
}

/** A copy of `frame` with `key: 1` added to the object at `path`. */
function withField(frame: unknown, path: (string | number)[], key: string): unknown {
  const copy = structuredClone(frame) as Record<string | number, unknown>;
  let target: Record<string | number, unknown> = copy;
  for (const step of path) target = target[step] as Record<string | number, unknown>;
  Object.defineProperty(target, key, { value: 1, enumerable: true, writable: true, configurable: true });
  return copy;
}

for (const { type, channel, schema, check, extra } of kinds) {
  const ofType = (v: Vector) => v.channel === channel && v.frame?.type === type;
  const valid = [...load("frames.valid.json").filter(ofType), ...extra];
  const invalid = load("frames.invalid.json").filter(ofType);

  /** Whether decodeFrame and the check agree with the zod schema on `frame`; whether zod took it. */
  function agree(frame: unknown, label: string): boolean {
    const zod = schema.safeParse(frame);
    // The check is handed what JSON.parse makes of the frame's text, as decodeFrame hands it.
    const parsed = JSON.parse(JSON.stringify(frame)) as Record<string, unknown>;
    const checked = check(parsed);
    const decoded = decodeFrame(JSON.stringify(frame), { channel });
    if (zod.success) {
      if (checked !== undefined) expect(checked, `${label}: the check's frame`).toEqual(zod.data);
      expect(decoded, label).toEqual({ ok: true, frame: zod.data });
    } else {
      expect(checked, `${label}: zod refuses, the check takes it`).toBeUndefined();
      expect(decoded.ok, label).toBe(false);
    }
    return zod.success;
  }

  describe(`the in-place check of ${type}`, () => {
    it("has shared vectors to check against", () => {
      expect(valid.length).toBeGreaterThan(1);
      expect(invalid.length).toBeGreaterThan(0);
    });

    it(`agrees with the zod schema on every shared ${type} vector`, () => {
      for (const vector of [...valid, ...invalid]) agree(vector.frame, vector.name);
    });

    it(`agrees with the zod schema on every mutation of every valid ${type} vector`, () => {
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
      expect(refused).toBeGreaterThan(50);
      expect(accepted).toBeGreaterThan(10);
    });

    it("leaves a frame with a field zod drops (or __proto__) to zod, anywhere in the frame", () => {
      for (const vector of valid) {
        for (const path of objectPaths(vector.frame)) {
          for (const key of ["extra", "__proto__"]) {
            const frame = withField(vector.frame, path, key);
            const label = `${vector.name}: ${key} added at ${path.join(".") || "the top"}`;
            agree(frame, label);
            // Within `arguments` (any object) a field is kept, and below its top level (which
            // zod copies key by key) even `__proto__`. A conversation item with a field zod
            // drops is zod's copy; anywhere else the whole frame is left to zod.
            const inItem = path[0] === "conversation" && path.length >= 2;
            const argumentsAt = inItem ? 2 : 0;
            const kept =
              path[argumentsAt] === "arguments" && (key !== "__proto__" || path.length > argumentsAt + 1);
            const parsed = JSON.parse(JSON.stringify(frame)) as Record<string, unknown>;
            const items = parsed.conversation as unknown[] | undefined;
            const item = inItem ? items?.[path[1] as number] : undefined;
            const checked = check(parsed);
            if (kept) continue;
            if (!inItem) expect(checked, label).toBeUndefined();
            else if (checked !== undefined)
              expect((checked.conversation as unknown[])[path[1] as number], label).not.toBe(item);
          }
        }
      }
    });

    it("hands on the parsed frame itself, without a copy, when zod would return it unchanged", () => {
      const plain = valid.find((vector) => check(JSON.parse(JSON.stringify(vector.frame))) !== undefined);
      expect(plain, "a valid vector the check takes").toBeDefined();
      const parsed = JSON.parse(JSON.stringify(plain!.frame)) as Record<string, unknown>;
      expect(check(parsed)).toBe(parsed);
    });

    if (type === "hosted.call") {
      it("hands on a conversation's plain items themselves, and zod's copy of the others", () => {
        expect(schema.safeParse(richCall.frame).success, "zod takes the frame").toBe(true);
        const parsed = JSON.parse(JSON.stringify(richCall.frame)) as { conversation: unknown[] };
        const items = [...parsed.conversation];
        const checked = check(parsed as Record<string, unknown>);
        expect(checked).toBe(parsed);
        const out = checked!.conversation as unknown[];
        // Items 1 and 3 carry images: zod's; the others are the parsed items.
        expect(out.map((item, i) => item === items[i])).toEqual([true, false, true, false, true]);
        const plain = JSON.parse(JSON.stringify(valid[0]!.frame)) as { conversation: unknown[] };
        const conversation = plain.conversation;
        expect(conversation.length).toBeGreaterThan(0);
        expect(check(plain as Record<string, unknown>)!.conversation).toBe(conversation);
      });
    }
  });
}

describe("the in-place checks and zod's wording", () => {
  it("leaves the error of a frame it refuses to zod: the path of the wrong field", () => {
    const decoded = decodeFrame(
      JSON.stringify({
        type: "hosted.result",
        callId: "call_1",
        attempt: 1,
        result: { outcome: "completed", content: { images: [] } },
      }),
      { channel: "worker-to-server" },
    );
    expect(decoded.ok).toBe(false);
    if (!decoded.ok)
      expect(decoded.error).toMatchObject({ code: "invalid_frame", path: "result.content.text" });
  });

  it("fills in a result's missing images through zod", () => {
    const decoded = decodeFrame(
      JSON.stringify({
        type: "hosted.result",
        callId: "call_1",
        attempt: 1,
        result: { outcome: "completed", content: { text: "ok" } },
      }),
      { channel: "worker-to-server" },
    );
    expect(decoded).toMatchObject({ ok: true, frame: { result: { content: { text: "ok", images: [] } } } });
  });
});
