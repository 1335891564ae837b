// The compatibility rule of PROTOCOL_VERSION, where code can check it: within a version a peer
// may add optional fields and new frame types, so a receiver must ignore unknown fields at every
// level and tell an unknown frame type apart from a broken frame.

import { describe, expect, it } from "vitest";
import validVectors from "../vectors/frames.valid.json";
import { decodeFrame, type FrameChannel, knownTypes } from "./decode-frame";
import { DEFAULT_MAX_FRAME_BYTES, PROTOCOL_VERSION } from "./version";

const CHANNELS: FrameChannel[] = [
  "client-to-server",
  "server-to-client",
  "worker-to-server",
  "server-to-worker",
];

// Fields whose value is free-form JSON keep whatever they hold; everywhere else an unknown field
// must be dropped.
const FREE_FORM = new Set(["metadata", "arguments", "customData", "parameters"]);

/** The frame with an unknown field added to every object in it that is not free-form JSON. */
function withFutureFields(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withFutureFields);
  if (typeof value !== "object" || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value))
    out[key] = FREE_FORM.has(key) ? inner : withFutureFields(inner);
  out.addedInAFutureMinor = { nested: [1, "two"] };
  return out;
}

describe("PROTOCOL_VERSION", () => {
  it("is the integer the handshake frames carry", () => {
    expect(Number.isInteger(PROTOCOL_VERSION)).toBe(true);
    const hello = decodeFrame(
      JSON.stringify({ type: "hello", protocol: PROTOCOL_VERSION, auth: { kind: "user", token: "t" } }),
      {
        channel: "client-to-server",
      },
    );
    expect(hello.ok && hello.frame.type === "hello" && hello.frame.protocol).toBe(PROTOCOL_VERSION);
  });

  it("refuses frames over 5 MiB by default, as the issue asks", () => {
    expect(DEFAULT_MAX_FRAME_BYTES).toBe(5 * 1024 * 1024);
    const text = `{"type":"ping","nonce":"${"x".repeat(DEFAULT_MAX_FRAME_BYTES)}"}`;
    expect(decodeFrame(text, { channel: "server-to-worker" }).ok).toBe(false);
  });
});

describe("the compatibility rule", () => {
  const frames = validVectors.vectors.filter((v) => "frame" in v && v.frame !== undefined);

  it.each(frames.map((v) => [v.name, v] as const))(
    "%s: unknown fields at every level are ignored",
    (_name, vector) => {
      const channel = vector.channel as FrameChannel;
      const plain = decodeFrame(JSON.stringify(vector.frame), { channel });
      const future = decodeFrame(JSON.stringify(withFutureFields(vector.frame)), { channel });
      if (!future.ok)
        throw new Error(`${future.error.code} at ${future.error.path}: ${future.error.message}`);
      expect(plain.ok).toBe(true);
      expect(future.frame).toEqual(plain.ok ? plain.frame : undefined);
    },
  );

  it("keeps unknown keys inside free-form JSON fields", () => {
    const frame = {
      type: "session.create",
      requestId: "r",
      agent: "a",
      metadata: { anything: { deep: true } },
      tools: [{ name: "t", description: "d", parameters: { type: "object", $defs: {}, "x-extra": 1 } }],
    };
    const result = decodeFrame(JSON.stringify(frame), { channel: "client-to-server" });
    expect(result.ok && result.frame).toEqual(frame);
  });

  it("answers a new frame type with unknown_frame_type on every channel, not invalid_frame", () => {
    for (const channel of CHANNELS) {
      const result = decodeFrame(JSON.stringify({ type: "session.fork", sessionId: "s" }), { channel });
      expect(result.ok || result.error.code).toBe("unknown_frame_type");
    }
  });

  it("gives every channel heartbeats in both directions", () => {
    for (const channel of CHANNELS) {
      expect(knownTypes(channel).has("ping"), channel).toBe(true);
      expect(knownTypes(channel).has("pong"), channel).toBe(true);
    }
  });
});
