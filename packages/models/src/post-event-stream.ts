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
