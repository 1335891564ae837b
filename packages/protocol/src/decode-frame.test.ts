import { afterEach, describe, expect, it, vi } from "vitest";
import type { z } from "zod";
import validVectors from "../vectors/frames.valid.json";
import { decodeFrame, type FrameChannel, frameSchema, knownTypes } from "./decode-frame";
import { FrameDecodeError } from "./errors";
import { DEFAULT_MAX_FRAME_BYTES, DEFAULT_MAX_RESULT_FRAME_BYTES, MAX_IMAGE_BYTES } from "./version";

const CHANNELS: FrameChannel[] = [
  "client-to-server",
  "server-to-client",
  "worker-to-server",
  "server-to-worker",
];

/** One valid frame of every type on every channel, taken from the shared vectors. */
function sampleFrames(): { channel: FrameChannel; type: string; frame: Record<string, unknown> }[] {
  const samples = new Map<string, { channel: FrameChannel; type: string; frame: Record<string, unknown> }>();
  for (const vector of validVectors.vectors) {
    if (!("frame" in vector) || vector.frame === undefined) continue;
    const frame = vector.frame as Record<string, unknown>;
    const key = `${vector.channel} ${frame.type}`;
    if (!samples.has(key)) {
      samples.set(key, { channel: vector.channel as FrameChannel, type: frame.type as string, frame });
    }
  }
  return [...samples.values()];
}

function shapeOf(channel: FrameChannel, type: string): Record<string, z.ZodType> {
  const option = (frameSchema(channel).options as readonly z.ZodObject[]).find(
    (candidate) => (candidate.shape.type as z.ZodLiteral).value === type,
  );
  return option!.shape;
}

const decode = (frame: unknown, channel: FrameChannel) => decodeFrame(JSON.stringify(frame), { channel });

describe("decodeFrame: every frame type", () => {
  const samples = sampleFrames();

  it("has a sample of every type on every channel", () => {
    for (const channel of CHANNELS) {
      const sampled = samples.filter((s) => s.channel === channel).map((s) => s.type);
      expect(new Set(sampled)).toEqual(knownTypes(channel));
    }
  });

  it.each(samples.map((s) => [`${s.channel} ${s.type}`, s] as const))("%s decodes", (_key, sample) => {
    const result = decode(sample.frame, sample.channel);
    expect(result.ok).toBe(true);
    if (result.ok) expect(result.frame.type).toBe(sample.type);
  });

  it.each(samples.map((s) => [`${s.channel} ${s.type}`, s] as const))(
    "%s: each required field, when missing, is named in the error",
    (_key, sample) => {
      const shape = shapeOf(sample.channel, sample.type);
      const required = Object.keys(shape).filter(
        (key) => key !== "type" && !shape[key]!.safeParse(undefined).success,
      );
      for (const key of required) {
        const { [key]: _removed, ...rest } = sample.frame;
        const result = decode(rest, sample.channel);
        expect(result.ok, key).toBe(false);
        if (!result.ok) {
          expect(result.error.code).toBe("invalid_frame");
          expect(result.error.path).toBe(key);
          expect(result.error.message).toContain(key);
        }
      }
    },
  );

  it.each(samples.map((s) => [`${s.channel} ${s.type}`, s] as const))(
    "%s: each field with a value of the wrong kind is named in the error",
    (_key, sample) => {
      const shape = shapeOf(sample.channel, sample.type);
      const candidates: unknown[] = [[[1]], 1.5, "wrong", true, null, { wrong: true }];
      for (const [key, field] of Object.entries(shape)) {
        if (key === "type") continue;
        const wrong = candidates.find((candidate) => !field.safeParse(candidate).success);
        const result = decode({ ...sample.frame, [key]: wrong }, sample.channel);
        expect(result.ok, key).toBe(false);
        if (!result.ok) {
          expect(result.error.code).toBe("invalid_frame");
          expect(
            result.error.path === key || result.error.path?.startsWith(`${key}.`),
            result.error.path,
          ).toBe(true);
        }
      }
    },
  );
});

describe("decodeFrame: nested paths", () => {
  it("names the array index and the field of a bad tool spec", () => {
    const result = decode(
      {
        type: "session.create",
        requestId: "r_1",
        agent: "support",
        tools: [
          { name: "ok", description: "d", parameters: { type: "object" } },
          { name: "not ok", description: "d" },
        ],
      },
      "client-to-server",
    );
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error).toBeInstanceOf(FrameDecodeError);
    expect(result.error.path).toBe("tools.1.name");
    // Every problem is listed, not only the first.
    expect(result.error.issues).toEqual([
      "tools.1.name: must be 1 to 64 letters, digits, '_' or '-'",
      "tools.1.parameters: Invalid input: expected object, received undefined",
    ]);
  });

  it("names the field of the image form that was meant", () => {
    const frame = (image: unknown) => ({
      type: "message.send",
      sessionId: "s",
      commandId: "c",
      text: "t",
      images: [image],
    });
    const url = decode(frame({ type: "image", url: "ftp://x" }), "client-to-server");
    const data = decode(frame({ type: "image", mimeType: "image/tiff", data: "AAAA" }), "client-to-server");
    const both = decode(
      frame({ type: "image", url: "https://x", mimeType: "image/png", data: "AAAA" }),
      "client-to-server",
    );
    expect(url.ok || url.error.path).toBe("images.0.url");
    expect(data.ok || data.error.path).toBe("images.0.mimeType");
    expect(both.ok || both.error.path).toBe("images.0.data");
    expect(both.ok || both.error.message).toContain("an image with a url carries no data");
  });
});

describe("decodeFrame: size limit", () => {
  afterEach(() => vi.restoreAllMocks());

  it("refuses a frame over the default 5 MiB before parsing it", () => {
    const parse = vi.spyOn(JSON, "parse");
    const text = `{"type":"ping","nonce":"${"x".repeat(DEFAULT_MAX_FRAME_BYTES)}"}`;
    const result = decodeFrame(text, { channel: "client-to-server" });
    expect(result.ok || result.error.code).toBe("frame_too_large");
    expect(parse).not.toHaveBeenCalled();
  });

  it("counts UTF-8 bytes, not characters", () => {
    const text = `{"type":"ping","nonce":"${"é".repeat(30)}"}`; // 56 characters, 86 bytes
    expect(text.length).toBeLessThan(64);
    const result = decodeFrame(text, { channel: "client-to-server", maxBytes: 64 });
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.code).toBe("frame_too_large");
      expect(result.error.message).toBe("frame is 86 bytes, over the limit of 64 bytes");
    }
  });

  it("accepts a frame of exactly the limit, and refuses one byte more", () => {
    const text = `{"type":"ping","nonce":"🚄🚄"}`;
    const bytes = new TextEncoder().encode(text).byteLength;
    expect(decodeFrame(text, { channel: "client-to-server", maxBytes: bytes }).ok).toBe(true);
    const over = decodeFrame(text, { channel: "client-to-server", maxBytes: bytes - 1 });
    expect(over.ok || over.error.code).toBe("frame_too_large");
  });

  it("measures bytes of binary frames and decodes them as UTF-8", () => {
    const bytes = new TextEncoder().encode('{"type":"pong","nonce":"ü"}');
    const ok = decodeFrame(bytes, { channel: "worker-to-server" });
    expect(ok.ok && ok.frame).toEqual({ type: "pong", nonce: "ü" });
    const over = decodeFrame(bytes, { channel: "worker-to-server", maxBytes: bytes.byteLength - 1 });
    expect(over.ok || over.error.message).toBe(
      `frame is ${bytes.byteLength} bytes, over the limit of ${bytes.byteLength - 1} bytes`,
    );
  });

  it("refuses binary frames that are not valid UTF-8", () => {
    const bytes = new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]);
    const result = decodeFrame(bytes, { channel: "client-to-server" });
    expect(result.ok || [result.error.code, result.error.message]).toEqual([
      "invalid_json",
      "frame is not valid UTF-8",
    ]);
  });
});

describe("decodeFrame: what is not a frame", () => {
  // packages/protocol/README.md, "Decode and validate frames": decodeFrame never throws.
  it.each([
    [null, "not null"],
    [undefined, "not undefined"],
    [42, "not number"],
    [new ArrayBuffer(2), "not object"],
  ])("answers %s from plain JavaScript with invalid_frame instead of throwing", (value, says) => {
    const result = decodeFrame(value as unknown as string, { channel: "client-to-server" });
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.code).toBe("invalid_frame");
      expect(result.error.message).toContain(says);
    }
  });

  it.each([
    ["{", "invalid_json", undefined],
    ["", "invalid_json", undefined],
    ["[1]", "invalid_frame", undefined],
    ['"ping"', "invalid_frame", undefined],
    ["{}", "invalid_frame", "type"],
    ['{"type":null}', "invalid_frame", "type"],
    ['{"type":"nope"}', "unknown_frame_type", "type"],
    ['{"type":"__proto__"}', "unknown_frame_type", "type"],
    ['{"type":"toString"}', "unknown_frame_type", "type"],
  ])("%j gives %s", (text, code, path) => {
    const result = decodeFrame(text, { channel: "client-to-server" });
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.code).toBe(code);
      expect(result.error.path).toBe(path);
    }
  });

  it("keeps frame types apart by channel", () => {
    const frame = JSON.stringify({ type: "hosted.cancel", callId: "c", reason: "interrupted" });
    expect(decodeFrame(frame, { channel: "server-to-worker" }).ok).toBe(true);
    for (const channel of ["client-to-server", "server-to-client", "worker-to-server"] as const) {
      const result = decodeFrame(frame, { channel });
      expect(result.ok || result.error.message).toBe(
        `type: unknown frame type 'hosted.cancel' on ${channel}`,
      );
    }
  });
});

describe("decodeFrame: result frames", () => {
  const image = (bytes: number) => "A".repeat(Math.ceil(bytes / 3) * 4);
  const hostedResult = (data: string) =>
    JSON.stringify({
      type: "hosted.result",
      callId: "c_1",
      attempt: 1,
      result: {
        outcome: "completed",
        content: { text: "the chart", images: [{ type: "image", mimeType: "image/png", data }] },
      },
    });

  it("takes a result carrying a 5 MiB image as base64, over the 5 MiB limit of other frames", () => {
    const text = hostedResult(image(MAX_IMAGE_BYTES));
    expect(text.length).toBeGreaterThan(DEFAULT_MAX_FRAME_BYTES);
    const result = decodeFrame(text, { channel: "worker-to-server" });
    expect(result.ok && result.frame.type).toBe("hosted.result");
    const page = decodeFrame(text.replace('"hosted.result"', '"tool.result","sessionId":"s_1"'), {
      channel: "client-to-server",
    });
    expect(page.ok && page.frame.type).toBe("tool.result");
  });

  it("refuses a result over the result limit, and any other frame over 5 MiB without parsing it", () => {
    const over = decodeFrame(hostedResult(image(DEFAULT_MAX_RESULT_FRAME_BYTES)), {
      channel: "worker-to-server",
    });
    expect(over.ok || over.error.message).toMatch(/over the limit of 8388608 bytes/);
    const parse = vi.spyOn(JSON, "parse");
    const say = `{"type":"hosted.say","callId":"c_1","text":"${"x".repeat(DEFAULT_MAX_FRAME_BYTES)}"}`;
    const refused = decodeFrame(say, { channel: "worker-to-server" });
    expect(refused.ok || refused.error.message).toMatch(/over the limit of 5242880 bytes/);
    expect(parse).not.toHaveBeenCalled();
    parse.mockRestore();
    // Naming a result type in a field does not make a frame a result.
    const sneaky = `{"type":"hosted.say","callId":"c_1","text":"\\"hosted.result\\"${"x".repeat(DEFAULT_MAX_FRAME_BYTES)}"}`;
    const sneakyResult = decodeFrame(sneaky, { channel: "worker-to-server" });
    expect(sneakyResult.ok || sneakyResult.error.code).toBe("frame_too_large");
  });

  it("keeps one limit for every frame when only maxBytes is given", () => {
    const text = hostedResult(image(3_000));
    const result = decodeFrame(text, { channel: "worker-to-server", maxBytes: 1_000 });
    expect(result.ok || result.error.message).toMatch(/over the limit of 1000 bytes/);
    const wider = decodeFrame(text, { channel: "worker-to-server", maxBytes: 1_000, maxResultBytes: 8_000 });
    expect(wider.ok).toBe(true);
  });
});

describe("decodeFrame: nesting limit", () => {
  const nested = (depth: number) => {
    let value: unknown = "leaf";
    for (let i = 0; i < depth; i++) value = { a: value };
    return value;
  };

  it("refuses metadata nested 5,000 deep as invalid_frame with the path, without running out of stack", () => {
    const deep = `${'{"a":'.repeat(5_000)}"leaf"${"}".repeat(5_000)}`;
    const text = `{"type":"session.create","requestId":"r1","agent":"a","metadata":${deep}}`;
    const result = decodeFrame(text, { channel: "client-to-server" });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.error.code).toBe("invalid_frame");
    expect(result.error.path).toBe("metadata.a.a.a.a.a.a.a");
    expect(result.error.message).toContain("nested deeper than 64 levels");
  });

  it("takes nesting up to the limit and honours maxDepth", () => {
    const frame = { type: "session.create", requestId: "r1", agent: "a", metadata: nested(60) };
    expect(decodeFrame(JSON.stringify(frame), { channel: "client-to-server" }).ok).toBe(true);
    const tight = decodeFrame(JSON.stringify(frame), { channel: "client-to-server", maxDepth: 10 });
    expect(tight.ok ? undefined : tight.error.path).toBe("metadata.a.a.a.a.a.a.a");
  });

  it("finds a container at the limit inside arrays and behind shallow siblings, and passes one a level above it", () => {
    // metadata is level 1; its value at level 1 + k sits k levels below it.
    const inArray = (depth: number) => ({
      type: "session.create",
      requestId: "r1",
      agent: "a",
      metadata: { first: { shallow: true }, list: [1, "x", [nested(depth)]] },
    });
    // metadata (1) > list (2) > inner array (3) > nested objects from level 4.
    const exact = decodeFrame(JSON.stringify(inArray(5)), { channel: "client-to-server", maxDepth: 9 });
    expect(exact.ok).toBe(true);
    const over = decodeFrame(JSON.stringify(inArray(6)), { channel: "client-to-server", maxDepth: 9 });
    expect(over.ok).toBe(false);
    if (over.ok) return;
    expect(over.error.code).toBe("invalid_frame");
    expect(over.error.path).toBe("metadata.list.2.0.a.a.a.a");
    expect(over.error.message).toContain("nested deeper than 9 levels");
  });
});
