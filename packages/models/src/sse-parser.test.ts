import { describe, expect, it } from "vitest";
import { readSse, type SseEvent, SseParser } from "./sse-parser";

function parseInPieces(text: string, cuts: number[]): SseEvent[] {
  const parser = new SseParser();
  const events: SseEvent[] = [];
  let from = 0;
  for (const cut of [...cuts, text.length]) {
    events.push(...parser.push(text.slice(from, cut)));
    from = cut;
  }
  return events;
}

const stream =
  ": keep-alive comment\r\n" +
  "event: message_start\r\n" +
  'data: {"type":"message_start"}\r\n' +
  "\r\n" +
  "data: first line\n" +
  "data:second line\n" +
  "id: 7\n" +
  "\n" +
  "event: ping\rdata: {}\r\r" +
  "data: [DONE]\n\n";

const expected: SseEvent[] = [
  { event: "message_start", data: '{"type":"message_start"}' },
  { event: "message", data: "first line\nsecond line", id: "7" },
  { event: "ping", data: "{}", id: "7" },
  { event: "message", data: "[DONE]", id: "7" },
];

describe("SseParser", () => {
  it("parses CRLF, CR and LF line ends, comments and multi-line data", () => {
    expect(parseInPieces(stream, [])).toEqual(expected);
  });

  it("gives the same events however the stream is split, including inside a CRLF", () => {
    for (let a = 0; a <= stream.length; a++) {
      const b = Math.min(stream.length, a + 7);
      expect(parseInPieces(stream, [a, b])).toEqual(expected);
    }
    const oneByOne = parseInPieces(
      stream,
      Array.from({ length: stream.length }, (_, i) => i),
    );
    expect(oneByOne).toEqual(expected);
  });

  it("drops an event the stream ends in the middle of, and ignores events without data", () => {
    expect(parseInPieces('event: x\n\ndata: {"partial":', [])).toEqual([]);
  });

  it("strips a leading byte order mark", () => {
    expect(parseInPieces("\uFEFFdata: a\n\n", [])).toEqual([{ event: "message", data: "a" }]);
  });
});

describe("readSse", () => {
  it("decodes UTF-8 split between network chunks", async () => {
    const bytes = new TextEncoder().encode('data: {"t":"Grüße 👋"}\n\n');
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const byte of bytes) controller.enqueue(new Uint8Array([byte]));
        controller.close();
      },
    });
    const events: SseEvent[] = [];
    for await (const event of readSse(body)) events.push(event);
    expect(events).toEqual([{ event: "message", data: '{"t":"Grüße 👋"}' }]);
  });
});
