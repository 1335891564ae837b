import { describe, expect, it } from "vitest";
import { decodeFrame } from "./decode-frame";
import { encodeResultFrame } from "./encode-result-frame";
import { DEFAULT_MAX_RESULT_FRAME_BYTES, MAX_IMAGE_BYTES } from "./version";

const withImage = (base64Chars: number) => ({
  type: "hosted.result" as const,
  callId: "c_1",
  attempt: 2,
  result: {
    outcome: "completed" as const,
    content: {
      text: "chart",
      images: [{ type: "image" as const, mimeType: "image/png" as const, data: "A".repeat(base64Chars) }],
    },
  },
});

describe("encodeResultFrame", () => {
  it("sends a result with a 5 MiB image as it is", () => {
    const frame = withImage(Math.ceil(MAX_IMAGE_BYTES / 3) * 4);
    const text = encodeResultFrame(frame, DEFAULT_MAX_RESULT_FRAME_BYTES);
    expect(text).toBe(JSON.stringify(frame));
    expect(decodeFrame(text, { channel: "worker-to-server" }).ok).toBe(true);
  });

  it("replaces a result over the limit with a failed one the model can act on, same call and attempt", () => {
    const text = encodeResultFrame(withImage(2_000), 1_500);
    const decoded = decodeFrame(text, { channel: "worker-to-server" });
    expect(decoded.ok).toBe(true);
    expect(decoded.ok && decoded.frame).toMatchObject({
      type: "hosted.result",
      callId: "c_1",
      attempt: 2,
      result: { outcome: "failed", error: { code: "result_too_large" }, content: { images: [] } },
    });
    const message =
      decoded.ok && decoded.frame.type === "hosted.result" ? decoded.frame.result.content.text : "";
    expect(message).toMatch(/^The tool's result was 2\d{3} bytes, over the limit of 1500 bytes/);
    expect(new TextEncoder().encode(text).byteLength).toBeLessThan(1_500);
  });

  it("counts UTF-8 bytes, not characters", () => {
    const frame = {
      ...withImage(4),
      result: { outcome: "completed" as const, content: { text: "é".repeat(400), images: [] } },
    };
    const chars = JSON.stringify(frame).length;
    expect(encodeResultFrame(frame, chars + 100)).toContain("result_too_large");
    expect(encodeResultFrame(frame, chars + 400)).toBe(JSON.stringify(frame));
  });
});
