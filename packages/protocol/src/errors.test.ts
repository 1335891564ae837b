import { describe, expect, it } from "vitest";
import { ErrorCodes, FrameDecodeError, ProtocolError, ToolCallFormatError } from "./errors";

describe("errors", () => {
  it("carry a stable code and the path of the field", () => {
    const cause = new Error("root");
    const error = new ProtocolError("not_found", "no session s_1", { path: "sessionId", cause });
    expect([error.code, error.path, error.message, error.cause, error.name]).toEqual([
      "not_found",
      "sessionId",
      "no session s_1",
      cause,
      "ProtocolError",
    ]);
    expect(error).toBeInstanceOf(Error);
  });

  it("list every problem of a frame, defaulting to the message", () => {
    const decode = new FrameDecodeError("invalid_frame", "bad", { path: "a", issues: ["a: x", "b: y"] });
    expect(decode).toBeInstanceOf(ProtocolError);
    expect(decode.issues).toEqual(["a: x", "b: y"]);
    expect(new FrameDecodeError("invalid_json", "not JSON").issues).toEqual(["not JSON"]);
  });

  it("name the position of a bad tool call", () => {
    const error = new ToolCallFormatError("tool call at position 3 is null, expected an object", 3);
    expect([error.code, error.index, error.path, error.name]).toEqual([
      ErrorCodes.invalidToolCall,
      3,
      "3",
      "ToolCallFormatError",
    ]);
  });

  it("have codes that are unique snake_case strings", () => {
    const codes = Object.values(ErrorCodes);
    expect(new Set(codes).size).toBe(codes.length);
    for (const code of codes) expect(code).toMatch(/^[a-z]+(_[a-z]+)*$/);
  });
});
