import { ToolError } from "@patchbay/tools";
import { describe, expect, it } from "vitest";
import { toToolResultValue } from "./mcp-result";

describe("toToolResultValue", () => {
  it("joins text, keeps images, mentions resources and audio", () => {
    const output = toToolResultValue({
      content: [
        { type: "text", text: "one" },
        { type: "image", data: "AAAA", mimeType: "image/png" },
        { type: "resource", resource: { uri: "file:///a.txt", text: "inline text" } },
        {
          type: "resource",
          resource: { uri: "file:///b.bin", mimeType: "application/octet-stream", blob: "AA==" },
        },
        { type: "resource_link", uri: "file:///c", name: "c" },
        { type: "audio", data: "AA==", mimeType: "audio/wav" },
      ],
    });
    expect(output.text).toBe(
      "one\ninline text\n[resource file:///b.bin (application/octet-stream)]\n[c](file:///c)\n[audio audio/wav omitted]",
    );
    expect(output.images).toEqual([{ data: "AAAA", mimeType: "image/png" }]);
  });

  it("gives structuredContent as JSON text in place of its text rendering", () => {
    expect(
      toToolResultValue({ content: [{ type: "text", text: "3 items" }], structuredContent: { n: 3 } }).text,
    ).toBe('{"n":3}');
  });

  it("turns isError into a ToolError the model reads", () => {
    expect(() =>
      toToolResultValue({ isError: true, content: [{ type: "text", text: "no such file" }] }),
    ).toThrow(new ToolError("no such file", { code: "mcp_tool_error" }));
    expect(() => toToolResultValue({ isError: true })).toThrow(
      "The tool reported an error without saying why.",
    );
  });
});
