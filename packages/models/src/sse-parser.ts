/**
 * One server-sent event: its `event` name (`message` when the server named none) and its `data`,
 * the `data:` lines of the event joined with `\n`.
 *
 * @example
 * ```ts
 * const event: SseEvent = { event: "message_stop", data: '{"type":"message_stop"}' };
 * ```
 */
export interface SseEvent {
  event: string;
  data: string;
  id?: string;
}

/**
 * An incremental parser of the `text/event-stream` format as the WHATWG HTML standard defines it:
 * lines end in LF, CRLF or CR (also when a CRLF is split between two chunks), lines starting with
 * `:` are comments, an event is dispatched at a blank line, and several `data:` lines join with
 * `\n`. An event the stream ends in the middle of is dropped, as the standard says, so a cut
 * connection never produces a truncated payload.
 *
 * @example
 * ```ts
 * const parser = new SseParser();
 * for (const event of parser.push("data: hel")) console.log(event);
 * for (const event of parser.push('lo\n\n')) console.log(event.data); // "hello"
 * ```
 */
export class SseParser {
  private buffer = "";
  private data: string[] = [];
  private eventName = "";
  private id: string | undefined;
  private sawCr = false;
  private started = false;

  /** Feeds a decoded chunk; returns the events it completed. */
  push(chunk: string): SseEvent[] {
    if (!this.started && chunk.length > 0) {
      this.started = true;
      if (chunk.charCodeAt(0) === 0xfeff) chunk = chunk.slice(1);
    }
    // A CR that ended the previous chunk already ended its line; a LF right after it is the rest of a CRLF.
    if (this.sawCr && chunk.startsWith("\n")) chunk = chunk.slice(1);
    this.sawCr = false;
    const events: SseEvent[] = [];
    let text = this.buffer + chunk;
    let start = 0;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      if (c !== 0x0a && c !== 0x0d) continue;
      const line = text.slice(start, i);
      if (c === 0x0d) {
        if (i + 1 < text.length) {
          if (text.charCodeAt(i + 1) === 0x0a) i++;
        } else {
          this.sawCr = true;
        }
      }
      start = i + 1;
      const event = this.line(line);
      if (event) events.push(event);
    }
    text = text.slice(start);
    this.buffer = text;
    return events;
  }

  private line(line: string): SseEvent | undefined {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return undefined;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") this.data.push(value);
    else if (field === "event") this.eventName = value;
    else if (field === "id" && !value.includes("\0")) this.id = value;
    return undefined;
  }

  private dispatch(): SseEvent | undefined {
    const data = this.data;
    const eventName = this.eventName;
    this.data = [];
    this.eventName = "";
    if (data.length === 0) return undefined;
    const event: SseEvent = { event: eventName || "message", data: data.join("\n") };
    if (this.id !== undefined) event.id = this.id;
    return event;
  }
}

/**
 * Reads a response body as server-sent events, decoding UTF-8 across chunk boundaries (a
 * multi-byte character split between two network chunks stays whole). Cancels the body when the
 * consumer stops early.
 *
 * @example
 * ```ts
 * for await (const event of readSse(response.body!)) console.log(event.event, event.data);
 * ```
 */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent, void, undefined> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser();
  let done = false;
  try {
    // Bounded by the body: every read either delivers bytes or reports the end.
    while (!done) {
      const result = await reader.read();
      done = result.done;
      const text = result.done ? decoder.decode() : decoder.decode(result.value, { stream: true });
      for (const event of parser.push(text)) yield event;
    }
  } finally {
    if (!done) await reader.cancel().catch(() => undefined);
    reader.releaseLock();
  }
}
