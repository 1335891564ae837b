import { describe, expect, it } from "vitest";
import {
  ModelError,
  modelErrorFromResponse,
  modelErrorFromStreamError,
  parseRetryAfter,
  toModelError,
} from "./model-error";

describe("parseRetryAfter", () => {
  it("prefers retry-after-ms, then reads seconds and HTTP dates", () => {
    expect(parseRetryAfter(new Headers({ "retry-after-ms": "120", "retry-after": "9" }))).toBe(120);
    expect(parseRetryAfter(new Headers({ "retry-after": "2" }))).toBe(2000);
    expect(parseRetryAfter(new Headers({ "retry-after": "0.25" }))).toBe(250);
    const now = Date.parse("2026-01-01T00:00:00Z");
    expect(parseRetryAfter(new Headers({ "retry-after": "Thu, 01 Jan 2026 00:00:03 GMT" }), now)).toBe(3000);
    expect(parseRetryAfter(new Headers({ "retry-after": "soon" }))).toBeUndefined();
    expect(parseRetryAfter(new Headers())).toBeUndefined();
  });
});

describe("modelErrorFromResponse", () => {
  it("maps statuses and provider bodies to stable codes", () => {
    const openaiBody = (message: string, code: string | null) =>
      JSON.stringify({ error: { message, type: "invalid_request_error", param: null, code } });
    const cases: Array<[number, string, string]> = [
      [401, openaiBody("Incorrect API key provided", "invalid_api_key"), "authentication"],
      [403, '{"type":"error","error":{"type":"permission_error","message":"no access"}}', "authentication"],
      [
        400,
        openaiBody("This model's maximum context length is 8192 tokens.", "context_length_exceeded"),
        "context_too_long",
      ],
      [
        400,
        '{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}',
        "context_too_long",
      ],
      [400, openaiBody("Invalid schema for function 'f'", null), "bad_request"],
      [404, openaiBody("The model `gpt-9` does not exist", "model_not_found"), "bad_request"],
      [413, "request too large", "context_too_long"],
      [429, openaiBody("Rate limit reached", "rate_limit_exceeded"), "rate_limited"],
      [500, "upstream exploded", "unavailable"],
      [529, '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', "unavailable"],
    ];
    for (const [status, body, code] of cases) {
      const error = modelErrorFromResponse("p", status, new Headers(), body);
      expect([status, error.code]).toEqual([status, code]);
      expect(error.status).toBe(status);
    }
  });

  it("keeps the provider's message, code and retry-after; an exhausted quota is not retryable", () => {
    const limited = modelErrorFromResponse(
      "openai",
      429,
      new Headers({ "retry-after": "3" }),
      JSON.stringify({ error: { message: "Rate limit reached for gpt-4o", code: "rate_limit_exceeded" } }),
    );
    expect(limited).toMatchObject({
      code: "rate_limited",
      message: "openai: Rate limit reached for gpt-4o",
      providerCode: "rate_limit_exceeded",
      retryAfterMs: 3000,
      retryable: true,
    });
    const quota = modelErrorFromResponse(
      "openai",
      429,
      new Headers(),
      JSON.stringify({ error: { message: "You exceeded your current quota", code: "insufficient_quota" } }),
    );
    expect(quota.retryable).toBe(false);
    expect(modelErrorFromResponse("x", 400, new Headers(), "bad").retryable).toBe(false);
  });

  it("reads Google's error body: a bad key is authentication, an input over the limit context_too_long", () => {
    const google = (message: string, status: string, reason?: string) =>
      JSON.stringify({
        error: {
          code: 400,
          message,
          status,
          ...(reason === undefined
            ? {}
            : { details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason }] }),
        },
      });
    const key = modelErrorFromResponse(
      "gemini",
      400,
      new Headers(),
      google("API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT", "API_KEY_INVALID"),
    );
    expect(key).toMatchObject({ code: "authentication", providerCode: "API_KEY_INVALID", retryable: false });
    const long = modelErrorFromResponse(
      "gemini",
      400,
      new Headers(),
      google(
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).",
        "INVALID_ARGUMENT",
      ),
    );
    expect(long).toMatchObject({ code: "context_too_long", providerCode: "INVALID_ARGUMENT" });
    // The same error inside a stream that began with 200.
    const midStream = modelErrorFromStreamError("gemini", {
      code: 400,
      message: "API key not valid. Please pass a valid API key.",
      status: "INVALID_ARGUMENT",
      details: [{ reason: "API_KEY_INVALID" }],
    });
    expect(midStream).toMatchObject({ code: "authentication", providerCode: "API_KEY_INVALID", status: 400 });
  });

  it("keeps the provider's request id (x-request-id, Anthropic's request-id)", () => {
    const openai = modelErrorFromResponse("openai", 400, new Headers({ "x-request-id": "req_abc123" }), "{}");
    expect(openai.requestId).toBe("req_abc123");
    const anthropic = modelErrorFromResponse(
      "anthropic",
      529,
      new Headers({ "request-id": "req_011CSHoEeqs5C35K2UUqR7Fy" }),
      '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    );
    expect(anthropic.requestId).toBe("req_011CSHoEeqs5C35K2UUqR7Fy");
    expect(modelErrorFromResponse("x", 500, new Headers(), "").requestId).toBeUndefined();
  });
});

describe("toModelError", () => {
  it("reports an abort as aborted and a failed connection as a retryable unavailable", () => {
    const controller = new AbortController();
    controller.abort();
    expect(toModelError(new Error("whatever"), controller.signal, "p").code).toBe("aborted");
    const refused = new TypeError("fetch failed", { cause: new Error("connect ECONNREFUSED 127.0.0.1:9") });
    const error = toModelError(refused, undefined, "openai");
    expect(error).toMatchObject({ code: "unavailable", retryable: true });
    expect(error.message).toContain("ECONNREFUSED");
    const original = new ModelError("bad_request", "x");
    expect(toModelError(original, undefined, "p")).toBe(original);
  });
});
