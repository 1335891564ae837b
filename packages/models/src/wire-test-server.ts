// Used by the adapter tests only (not exported, not bundled): a real HTTP server on 127.0.0.1
// that answers with scripted provider wire bytes and records every request it received.
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { ModelStreamEvent } from "./language-model";

/** One request the server received, with its body parsed as JSON. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: any;
  receivedAt: number;
}

/** How the server answers one request. */
export interface WireReply {
  status?: number;
  headers?: Record<string, string>;
  /** Written one by one with a short pause, so the client reads them as separate network chunks. */
  chunks?: Array<string | Uint8Array>;
  /** The pause between chunks. Default 2 ms. */
  pauseMs?: number;
  /** Destroy the socket after the chunks instead of ending the response. */
  cut?: boolean;
  /** Keep the response open after the chunks until the client goes away. */
  hang?: boolean;
}

/** The running server. */
export interface WireServer {
  url: string;
  requests: RecordedRequest[];
  /** Queues the answers for the next requests, in order. */
  reply(...replies: WireReply[]): void;
  close(): Promise<void>;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Cuts `text` into pieces of `size` characters, so chunk borders fall inside lines and JSON tokens. */
export function splitEvery(text: string, size: number): string[] {
  const pieces: string[] = [];
  for (let i = 0; i < text.length; i += size) pieces.push(text.slice(i, i + size));
  return pieces;
}

/** Serializes SSE events: `[eventName, payload]` pairs, or bare payloads for `data:`-only streams. */
export function sse(events: Array<unknown | [string, unknown]>): string {
  return events
    .map((event) => {
      if (Array.isArray(event) && typeof event[0] === "string" && event.length === 2) {
        return `event: ${event[0]}\ndata: ${JSON.stringify(event[1])}\n\n`;
      }
      return `data: ${typeof event === "string" ? event : JSON.stringify(event)}\n\n`;
    })
    .join("");
}

async function answer(response: ServerResponse, reply: WireReply): Promise<void> {
  response.writeHead(reply.status ?? 200, {
    "content-type": reply.status && reply.status >= 400 ? "application/json" : "text/event-stream",
    ...reply.headers,
  });
  response.flushHeaders();
  for (const chunk of reply.chunks ?? []) {
    if (response.destroyed) return;
    response.write(chunk);
    await pause(reply.pauseMs ?? 2);
  }
  if (reply.cut) {
    response.socket?.destroy();
    return;
  }
  if (reply.hang) return;
  response.end();
}

/**
 * Starts the server on 127.0.0.1, port 0. A request with no queued reply gets a 599 so a test
 * that sends more requests than it expected fails loudly.
 */
export async function startWireServer(): Promise<WireServer> {
  const requests: RecordedRequest[] = [];
  const queue: WireReply[] = [];
  const server = createServer((request, response) => {
    const receivedAt = performance.now();
    const parts: Buffer[] = [];
    request.on("data", (part: Buffer) => parts.push(part));
    request.on("end", () => {
      const text = Buffer.concat(parts).toString("utf8");
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // Recorded as text: the test's assertion on the body will show it.
      }
      requests.push({
        method: request.method ?? "",
        path: request.url ?? "",
        headers: request.headers,
        body,
        receivedAt,
      });
      const reply = queue.shift() ?? { status: 599, chunks: ['{"error":{"message":"no reply queued"}}'] };
      void answer(response, reply);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    reply: (...replies) => queue.push(...replies),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Every event of a model's stream, in order. */
export async function collect(events: AsyncIterable<ModelStreamEvent>): Promise<ModelStreamEvent[]> {
  const out: ModelStreamEvent[] = [];
  for await (const event of events) out.push(event);
  return out;
}
