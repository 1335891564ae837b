// Used by the replay tests only (not exported, not bundled): reads the recorded provider streams
// of fixtures/streams, frames them as each provider sends them, splits them at byte boundaries and
// collects what an adapter makes of them.
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { LanguageModel, ModelRequest, ReasoningPart } from "./language-model";
import { ModelError } from "./model-error";

export const DIR = fileURLToPath(new URL("../fixtures/streams/", import.meta.url));

export interface ManifestEntry {
  file: string;
  provider: string;
  kind: "recorded" | "derived";
  source?: { repository: string; path: string; commit: string; licence: string };
  derivedFrom?: { repository: string; path: string; commit: string; licence: string } | null;
  change?: string;
  reference?: string;
}
export const manifest = JSON.parse(readFileSync(`${DIR}manifest.json`, "utf8")) as {
  streams: ManifestEntry[];
};

/** `anthropic` and `responses` (OpenAI's Responses API) name each event after its `type`. */
export type Framing = "anthropic" | "responses" | "openai" | "gemini";

/** The payload lines of a fixture, framed as the provider sends them on the wire. */
export function frame(
  file: string,
  framing: Framing,
  options: { noTrailingBlankLine?: boolean } = {},
): string {
  const lines = readFileSync(`${DIR}${file}`, "utf8")
    .split("\n")
    .filter((line) => line.trim() !== "");
  let body =
    framing === "anthropic" || framing === "responses"
      ? lines
          .map((line) => `event: ${(JSON.parse(line) as { type: string }).type}\ndata: ${line}\n\n`)
          .join("")
      : framing === "gemini"
        ? lines.map((line) => `data: ${line}\r\n\r\n`).join("")
        : `${lines.map((line) => `data: ${line}\n\n`).join("")}data: [DONE]\n\n`;
  if (options.noTrailingBlankLine) body = body.replace(/\r?\n\r?\n$/, "");
  return body;
}

/** A small deterministic generator, so a failing split can be reproduced from its seed. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/**
 * Cuts the bytes at seeded random offsets and inside every multi-byte UTF-8 character (before
 * each continuation byte), so chunk borders fall mid-line, mid-JSON and mid-character.
 */
export function splitBytes(bytes: Uint8Array, seed: number, pieces = 24): Uint8Array[] {
  const cuts = new Set<number>();
  bytes.forEach((byte, i) => {
    if ((byte & 0xc0) === 0x80) cuts.add(i);
  });
  const next = random(seed);
  for (let i = 0; i < pieces; i++) cuts.add(1 + Math.floor(next() * (bytes.length - 1)));
  const sorted = [...cuts].sort((a, b) => a - b);
  const out: Uint8Array[] = [];
  let start = 0;
  for (const cut of sorted) {
    if (cut > start) out.push(bytes.subarray(start, cut));
    start = cut;
  }
  out.push(bytes.subarray(start));
  return out;
}

/** A `fetch` answering every request with the body one byte per read. */
export function byteByByteFetch(body: string): typeof fetch {
  return async () => {
    const bytes = new TextEncoder().encode(body);
    let i = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (i >= bytes.length) controller.close();
        else controller.enqueue(bytes.subarray(i, ++i));
      },
    });
    return new Response(stream, { status: 200, headers: { "content-type": "text/event-stream" } });
  };
}

export interface Outcome {
  text: string;
  refusal: string;
  reasoningText: string;
  parts: ReasoningPart[];
  calls: Array<{ id: string; name: string; arguments: Record<string, unknown> }>;
  finish?: { reason: string; usage: { inputTokens: number; outputTokens: number } };
  error?: { code: string; status?: number | undefined };
}

export async function run(model: LanguageModel, request: ModelRequest): Promise<Outcome> {
  const outcome: Outcome = { text: "", refusal: "", reasoningText: "", parts: [], calls: [] };
  try {
    for await (const event of model.stream(request)) {
      if (event.type === "text-delta") outcome.text += event.delta;
      else if (event.type === "refusal-delta") outcome.refusal += event.delta;
      else if (event.type === "reasoning-delta") outcome.reasoningText += event.delta;
      else if (event.type === "reasoning") outcome.parts.push(event.part);
      else if (event.type === "tool-call") {
        outcome.calls.push({ id: event.call.id, name: event.call.name, arguments: event.call.arguments });
      } else outcome.finish = { reason: event.reason, usage: event.usage };
    }
  } catch (error) {
    if (!(error instanceof ModelError)) throw error;
    outcome.error = { code: error.code, status: error.status };
  }
  return outcome;
}
