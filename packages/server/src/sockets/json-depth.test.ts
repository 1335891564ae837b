import { decodeFrame } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import { tooDeep } from "./json-depth";

const decode = (text: string, maxDepth: number) =>
  decodeFrame(Buffer.from(text), { channel: "client-to-server", maxDepth });

describe("tooDeep", () => {
  it("refuses what decodeFrame refuses for depth, with its message and path, and reads the top-level ids", () => {
    const frames = [
      `{"type":"session.create","requestId":"r_deep","agent":"support","metadata":${'{"a":'.repeat(5_000)}1${"}".repeat(5_000)}}`,
      `{"type":"x","sessionId":"s_1","commandId":"c\\"1","v":[1,{"b\\\\":[${"[".repeat(70)}${"]".repeat(70)}]}]}`,
      `${'{"a":'.repeat(3_000)}1${"}".repeat(3_000)}`,
      `{"k":"{{{{[[[[","v":${"[".repeat(65)}${"]".repeat(65)}}`,
    ];
    for (const text of frames) {
      const scanned = tooDeep(Buffer.from(text), 64);
      const decoded = decode(text, 64);
      expect(decoded.ok).toBe(false);
      if (decoded.ok || !scanned) throw new Error(`not refused: ${text.slice(0, 60)}`);
      expect(scanned.message).toBe(decoded.error.message);
      expect(scanned.path).toBe(decoded.error.path);
    }
    expect(tooDeep(Buffer.from(frames[0]!), 64)?.ids).toEqual({ requestId: "r_deep" });
    expect(tooDeep(Buffer.from(frames[1]!), 64)?.ids).toEqual({ sessionId: "s_1", commandId: 'c"1' });
    expect(tooDeep(Buffer.from(frames[1]!), 64)?.path).toBe("v.1.b\\.0.0.0.0.0");
  });

  it("passes frames within the limit, brackets inside strings, and text that is not JSON", () => {
    const within = `{"type":"x","v":${"[".repeat(63)}${"]".repeat(63)},"t":"${"{".repeat(500)}"}`;
    expect(decode(within, 64).ok).toBe(false); // unknown type, but not for its depth
    expect(tooDeep(Buffer.from(within), 64)).toBeUndefined();
    expect(tooDeep(Buffer.from(`{"t":"${"[".repeat(200)}`), 64)).toBeUndefined(); // unterminated
    expect(
      tooDeep(Buffer.from(JSON.stringify({ type: "message.send", text: "x".repeat(100_000) })), 64),
    ).toBeUndefined();
  });
});
