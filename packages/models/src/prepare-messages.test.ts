import { describe, expect, it } from "vitest";
import type { ModelMessage } from "./language-model";
import { IMAGE_OMITTED_NOTE, prepareMessages } from "./prepare-messages";

const png = { type: "image" as const, mimeType: "image/png" as const, data: "iVBORw0KGgo=" };
const url = { type: "image" as const, url: "https://example.com/seat-map.png" };

const conversation: ModelMessage[] = [
  { role: "system", content: "Be brief." },
  { role: "user", content: "What is in this picture?", images: [png, url] },
  { role: "assistant", content: "", toolCalls: [] },
  {
    role: "tool",
    toolCallId: "call_1",
    toolName: "seat_map",
    content: { text: "Seat map for LH400", images: [url] },
  },
  { role: "tool", toolCallId: "call_2", toolName: "echo", content: { text: "plain", images: [] } },
];

describe("prepareMessages", () => {
  it("leaves the conversation alone for a model that reads images", () => {
    expect(prepareMessages(conversation, { images: true, parallelToolCalls: true })).toBe(conversation);
  });

  it("replaces user images with a note and turns an image tool result into a failure for a text-only model", () => {
    const prepared = prepareMessages(conversation, { images: false, parallelToolCalls: true });
    expect(prepared[1]).toEqual({
      role: "user",
      content: `What is in this picture?\n${IMAGE_OMITTED_NOTE}\n${IMAGE_OMITTED_NOTE}`,
    });
    expect(prepared[3]).toEqual({
      role: "tool",
      toolCallId: "call_1",
      toolName: "seat_map",
      isError: true,
      content: {
        text: 'The tool "seat_map" failed: its result contains 1 image, and this model reads text only, so the result cannot be shown.',
        images: [],
      },
    });
    expect(prepared[4]).toBe(conversation[4]);
    expect(prepared[0]).toBe(conversation[0]);
    // The caller's conversation is not modified.
    expect(conversation[1]).toMatchObject({ images: [png, url] });
  });

  it("gives an image-only user message just the note", () => {
    const [message] = prepareMessages([{ role: "user", content: "", images: [png] }], {
      images: false,
      parallelToolCalls: false,
    });
    expect(message).toEqual({ role: "user", content: IMAGE_OMITTED_NOTE });
  });
});
