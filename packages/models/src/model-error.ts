/**
 * The stable codes of {@link ModelError}. Callers switch on these, never on messages.
 *
 * @example
 * ```ts
 * if (error instanceof ModelError && error.code === ModelErrorCodes.rateLimited) wait(error.retryAfterMs);
 * ```
 */
export const ModelErrorCodes = {
  authentication: "authentication",
  rateLimited: "rate_limited",
  contextTooLong: "context_too_long",
  badRequest: "bad_request",
  unavailable: "unavailable",
  aborted: "aborted",
  /** The provider was silent for longer than the idle timeout, or the call outlasted its total one. */
  timeout: "timeout",
} as const;

/**
 * A stable model error code.
 *
 * @example
 * ```ts
 * const code: ModelErrorCode = "context_too_long";
 * ```
 */
export type ModelErrorCode = (typeof ModelErrorCodes)[keyof typeof ModelErrorCodes];

/**
 * Options of a {@link ModelError}.
 *
 * @example
 * ```ts
 * const options: ModelErrorOptions = { status: 429, retryAfterMs: 2000 };
 * ```
 */
export interface ModelErrorOptions {
  /** The HTTP status the provider answered with, when there was one. */
  status?: number;
  /** How long the provider asked us to wait before trying again. */
  retryAfterMs?: number;
  /** The provider's own error type or code (`insufficient_quota`, `overloaded_error`, `API_KEY_INVALID`, ...). */
  providerCode?: string;
  /** The provider's id of the failed request (`x-request-id`, `request-id`), to quote to its support. */
  requestId?: string;
  /** Whether trying the same request again may succeed. Defaults from `code`. */
  retryable?: boolean;
  cause?: unknown;
}

/**
 * Every failure of a model call. `code` is stable; `message` is the provider's message where it
 * gave one; `status` is the HTTP status; `retryAfterMs` is set for rate limits when the provider
 * said how long to wait.
 *
 * @example
 * ```ts
 * try {
 *   for await (const event of model.stream(request)) handle(event);
 * } catch (error) {
 *   if (error instanceof ModelError && error.code === "context_too_long") trimConversation();
 * }
 * ```
 */
export class ModelError extends Error {
  readonly code: ModelErrorCode;
  readonly status: number | undefined;
  readonly retryAfterMs: number | undefined;
  readonly providerCode: string | undefined;
  /** The provider's id of the failed request (OpenAI's `x-request-id`, Anthropic's `request-id`). */
  readonly requestId: string | undefined;
  /** Whether the same request may succeed when tried again (rate limits, 5xx, dropped connections). */
  readonly retryable: boolean;
  constructor(code: ModelErrorCode, message: string, options: ModelErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = "ModelError";
    this.code = code;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
    this.providerCode = options.providerCode;
    this.requestId = options.requestId;
    this.retryable = options.retryable ?? (code === "rate_limited" || code === "unavailable");
  }
}

/**
 * Reads how long a provider asked to wait: `retry-after-ms` (OpenAI) in milliseconds, else
 * `retry-after` in seconds or as an HTTP date. Returns `undefined` when neither is usable.
 *
 * @example
 * ```ts
 * parseRetryAfter(new Headers({ "retry-after": "2" })); // 2000
 * ```
 */
export function parseRetryAfter(headers: Headers, now: number = Date.now()): number | undefined {
  const ms = headers.get("retry-after-ms");
  if (ms !== null && ms.trim() !== "") {
    const value = Number(ms);
    if (Number.isFinite(value) && value >= 0) return Math.round(value);
  }
  const after = headers.get("retry-after");
  if (after === null || after.trim() === "") return undefined;
  const seconds = Number(after);
  if (Number.isFinite(seconds)) return seconds >= 0 ? Math.round(seconds * 1000) : undefined;
  const date = Date.parse(after);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

// Gemini: "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
const CONTEXT_TOO_LONG =
  /context[_ ]length|maximum context|context (?:window|size)|prompt is too long|too many (?:input )?tokens|exceeds the (?:available )?context|input token count .*exceeds the maximum number of tokens/i;

// Provider codes that mean the key is wrong whatever the HTTP status (Gemini answers a bad key
// with 400 INVALID_ARGUMENT and the reason `API_KEY_INVALID`).
const AUTHENTICATION_CODES = new Set([
  "API_KEY_INVALID",
  "API_KEY_EXPIRED",
  "UNAUTHENTICATED",
  "PERMISSION_DENIED",
  "invalid_api_key",
  "authentication_error",
]);

/**
 * Whether a provider's error message or code says the conversation does not fit the model.
 * Providers and OpenAI-compatible servers all say it differently, so this matches their wording.
 *
 * @example
 * ```ts
 * isContextTooLong("prompt is too long: 210000 tokens > 200000 maximum"); // true
 * ```
 */
export function isContextTooLong(text: string | undefined): boolean {
  return text !== undefined && CONTEXT_TOO_LONG.test(text);
}

function errorCodeForStatus(
  status: number,
  providerCode: string | undefined,
  message: string,
): ModelErrorCode {
  if (status === 401 || status === 403) return "authentication";
  if (providerCode !== undefined && AUTHENTICATION_CODES.has(providerCode)) return "authentication";
  if (status === 413) return "context_too_long";
  if (status === 429) return "rate_limited";
  if (status === 408 || status >= 500) return "unavailable";
  if (isContextTooLong(providerCode) || isContextTooLong(message)) return "context_too_long";
  return "bad_request";
}

/**
 * Builds the {@link ModelError} for a provider's non-2xx HTTP answer from its status, headers and
 * body text. Understands the OpenAI (`{ error: { message, code, type } }`), Anthropic
 * (`{ type: "error", error: { type, message } }`) and Google (`{ error: { code, message, status,
 * details: [{ reason }] } }`, whose `reason`, else `status`, is the `providerCode`) error bodies
 * and plain-text bodies. The provider's request id (`x-request-id`, `request-id`) is kept.
 *
 * @example
 * ```ts
 * if (!response.ok) throw modelErrorFromResponse("openai", response.status, response.headers, await response.text());
 * ```
 */
export function modelErrorFromResponse(
  provider: string,
  status: number,
  headers: Headers,
  body: string,
): ModelError {
  const { message, providerCode } = readErrorBody(body);
  const text = message ?? (body.trim().slice(0, 500) || `HTTP ${status}`);
  const code = errorCodeForStatus(status, providerCode, text);
  // A 429 for an exhausted quota or billing problem does not go away by waiting.
  const retryable = code === "rate_limited" ? providerCode !== "insufficient_quota" : code === "unavailable";
  const requestId = requestIdOf(headers);
  return new ModelError(code, `${provider}: ${text}`, {
    status,
    retryAfterMs: parseRetryAfter(headers),
    ...(providerCode === undefined ? {} : { providerCode }),
    ...(requestId === undefined ? {} : { requestId }),
    retryable,
  });
}

/**
 * The provider's id of a request, from its answer's headers: `x-request-id` (OpenAI and most
 * compatible servers) or `request-id` (Anthropic).
 *
 * @example
 * ```ts
 * requestIdOf(new Headers({ "request-id": "req_011CS" })); // "req_011CS"
 * ```
 */
export function requestIdOf(headers: Headers): string | undefined {
  const id = headers.get("x-request-id") ?? headers.get("request-id");
  return id === null || id.trim() === "" ? undefined : id.trim().slice(0, 200);
}

/** Google's error detail: `details: [{ "@type": ".../google.rpc.ErrorInfo", reason: "API_KEY_INVALID" }]`. */
function googleReason(error: { details?: unknown }): string | undefined {
  if (!Array.isArray(error.details)) return undefined;
  for (const detail of error.details) {
    const reason = (detail as { reason?: unknown } | null)?.reason;
    if (typeof reason === "string" && reason !== "") return reason;
  }
  return undefined;
}

function readErrorBody(body: string): { message?: string; providerCode?: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return {};
  }
  if (typeof parsed !== "object" || parsed === null) return {};
  const error = (parsed as { error?: unknown }).error;
  if (typeof error === "string") return { message: error };
  if (typeof error !== "object" || error === null) {
    const message = (parsed as { message?: unknown }).message;
    return typeof message === "string" ? { message } : {};
  }
  const e = error as {
    message?: unknown;
    code?: unknown;
    type?: unknown;
    status?: unknown;
    details?: unknown;
  };
  const result: { message?: string; providerCode?: string } = {};
  if (typeof e.message === "string") result.message = e.message;
  if (typeof e.code === "string") result.providerCode = e.code;
  else if (typeof e.type === "string") result.providerCode = e.type;
  else {
    // Google: the numeric `code` is the HTTP status; `reason` says more than `status`.
    const google = googleReason(e) ?? (typeof e.status === "string" ? e.status : undefined);
    if (google !== undefined) result.providerCode = google;
  }
  return result;
}

/**
 * Turns anything thrown while calling a provider into a {@link ModelError}: an abort of `signal`
 * becomes `aborted`, a failed connection or a dropped stream becomes `unavailable` (retryable),
 * and a `ModelError` passes through.
 *
 * @example
 * ```ts
 * try { await fetch(url, { signal }); } catch (error) { throw toModelError(error, signal, "openai"); }
 * ```
 */
export function toModelError(error: unknown, signal: AbortSignal | undefined, provider: string): ModelError {
  if (error instanceof ModelError) return error;
  if (signal?.aborted || isAbortError(error)) {
    return new ModelError("aborted", `${provider}: the request was aborted`, { cause: error });
  }
  const detail = describeCause(error);
  return new ModelError("unavailable", `${provider}: connection failed: ${detail}`, {
    cause: error,
    retryable: true,
  });
}

function isAbortError(error: unknown): boolean {
  return error instanceof Error && (error.name === "AbortError" || error.name === "TimeoutError");
}

function describeCause(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // undici reports "fetch failed" and keeps the useful part (ECONNREFUSED, socket closed) in `cause`.
  const cause = error.cause instanceof Error ? `: ${error.cause.message}` : "";
  return `${error.message}${cause}`;
}

const STREAM_ERROR_CODES: Record<string, ModelErrorCode> = {
  authentication_error: "authentication",
  invalid_api_key: "authentication",
  permission_error: "authentication",
  rate_limit_error: "rate_limited",
  rate_limit_exceeded: "rate_limited",
  insufficient_quota: "rate_limited",
  context_length_exceeded: "context_too_long",
  request_too_large: "context_too_long",
  invalid_request_error: "bad_request",
  not_found_error: "bad_request",
};

/**
 * Builds the {@link ModelError} for an error the provider reported inside a stream that had
 * already started with HTTP 200: an Anthropic `error` event (`{ type, message }`, such as
 * `overloaded_error`) or an OpenAI-style `{ error: { message, type, code } }` chunk. A numeric
 * `code` (OpenRouter's `{ error: { code: 400, ... } }`) is read as the HTTP status it names, so a
 * refused request is `bad_request` and not retried. Unknown types count as the provider being
 * unavailable.
 *
 * @example
 * ```ts
 * throw modelErrorFromStreamError("anthropic", { type: "overloaded_error", message: "Overloaded" });
 * ```
 */
export function modelErrorFromStreamError(provider: string, error: unknown): ModelError {
  const e = (typeof error === "object" && error !== null ? error : { message: String(error) }) as {
    message?: unknown;
    type?: unknown;
    code?: unknown;
    status?: unknown;
    details?: unknown;
  };
  const message = typeof e.message === "string" ? e.message : "the provider reported an error mid-stream";
  // Google's `{ code: 400, status: "INVALID_ARGUMENT", details: [{ reason }] }`: reason, then status.
  const kinds = [e.code, e.type, googleReason(e), e.status].filter((k): k is string => typeof k === "string");
  // OpenRouter and other gateways put the HTTP status the upstream answered in a numeric `code`.
  const status = [e.code, e.status].find(
    (value): value is number => typeof value === "number" && value >= 400 && value <= 599,
  );
  let code: ModelErrorCode | undefined;
  for (const kind of kinds) {
    code = AUTHENTICATION_CODES.has(kind) ? "authentication" : STREAM_ERROR_CODES[kind];
    if (code !== undefined) break;
  }
  code ??= status === undefined ? "unavailable" : errorCodeForStatus(status, kinds[0], message);
  if (code === "bad_request" && isContextTooLong(message)) code = "context_too_long";
  const providerCode = kinds[0] ?? (status === undefined ? undefined : String(status));
  return new ModelError(code, `${provider}: ${message}`, {
    ...(status === undefined ? {} : { status }),
    ...(providerCode === undefined ? {} : { providerCode }),
    retryable: code === "unavailable" || (code === "rate_limited" && providerCode !== "insufficient_quota"),
  });
}
