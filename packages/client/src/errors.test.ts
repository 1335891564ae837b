import { describe, expect, it } from "vitest";
import {
  AuthError,
  ClientError,
  errorFromWire,
  NotFoundError,
  ProtocolViolationError,
  RateLimitedError,
  ServerError,
  TimeoutError,
} from "./errors";

describe("errorFromWire", () => {
  it.each([
    ["unauthorized", AuthError, "auth"],
    ["forbidden", AuthError, "auth"],
    ["not_found", NotFoundError, "not_found"],
    ["rate_limited", RateLimitedError, "rate_limited"],
    ["timed_out", TimeoutError, "timeout"],
    ["invalid_frame", ProtocolViolationError, "protocol"],
    ["unknown_frame_type", ProtocolViolationError, "protocol"],
    ["protocol_version", ProtocolViolationError, "protocol"],
    ["conflict", ServerError, "server"],
    ["internal", ServerError, "server"],
  ] as const)("maps %s to the class with a stable code", (wireCode, type, code) => {
    const error = errorFromWire({ code: wireCode, message: "m" });
    expect(error).toBeInstanceOf(type);
    expect(error).toBeInstanceOf(ClientError);
    expect(error).toBeInstanceOf(Error);
    expect(error.code).toBe(code);
    expect(error.wireCode).toBe(wireCode);
  });

  it("keeps the path, the retry hint, and falls back to the code when the message is empty", () => {
    const limited = errorFromWire({ code: "rate_limited", message: "", retryAfterMs: 250 });
    expect(limited).toMatchObject({ message: "rate_limited", retryAfterMs: 250 });
    expect(errorFromWire({ code: "invalid_frame", message: "bad", path: "tools.0.name" }).path).toBe(
      "tools.0.name",
    );
    expect(new AuthError("x").name).toBe("AuthError");
  });
});
