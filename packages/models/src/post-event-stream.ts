import { ModelError, modelErrorFromResponse } from "./model-error";

/**
 * POSTs a streaming request to a provider and returns the response body to read as server-sent
 * events. A non-2xx answer becomes the typed {@link ModelError} its status means (with the
 * provider's message and retry-after), so every adapter maps failures the same way and the retry
 * loop can decide on them.
 *
 * @example
 * ```ts
 * const body = await postEventStream({ provider: "openai", fetch, url, headers, body: json, signal });
 * for await (const event of readSse(body)) console.log(event.data);
 * ```
 */
export async function postEventStream(request: {
  provider: string;
  fetch: typeof fetch;
  url: string;
  headers: Record<string, string>;
  body: string;
  signal: AbortSignal | undefined;
  /** Called when the answer's headers and each chunk of its body arrive (the idle timer). */
  activity?: () => void;
}): Promise<ReadableStream<Uint8Array>> {
  const response = await request.fetch(request.url, {
    method: "POST",
    headers: request.headers,
    body: request.body,
    signal: request.signal ?? null,
  });
  if (!response.ok) {
    const text = await response.text().catch(() => "");
    throw modelErrorFromResponse(request.provider, response.status, response.headers, text);
  }
  if (response.body === null) {
    throw new ModelError("unavailable", `${request.provider}: the response has no body`);
  }
  const activity = request.activity;
  if (activity === undefined) return response.body;
  activity();
  return response.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        activity();
        controller.enqueue(chunk);
      },
    }),
  );
}

/**
 * Parses the data of one server-sent event as JSON. Data that is not JSON means the stream is
 * broken, which is reported as `unavailable` with the start of what arrived.
 *
 * @example
 * ```ts
 * const chunk = parseEventData<{ type?: string }>("anthropic", event.data);
 * ```
 */
export function parseEventData<T>(provider: string, data: string): T {
  try {
    return JSON.parse(data) as T;
  } catch {
    throw new ModelError(
      "unavailable",
      `${provider}: the stream sent data that is not JSON: ${data.slice(0, 200)}`,
    );
  }
}

/**
 * A token count from a provider's usage field: a non-negative whole number, or 0 for anything else.
 *
 * @example
 * ```ts
 * tokenCount(usage.prompt_tokens); // 0 when the server left it out
 * ```
 */
export function tokenCount(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? Math.round(value) : 0;
}
