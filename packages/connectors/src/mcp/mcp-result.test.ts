import { ToolError } from "@patchbay/tools";
import { describe, expect, it } from "vitest";
import { type McpCallResult, McpCallResultShape, toToolResultValue } from "./mcp-result";

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

  it("cuts the text at maxChars (default 100 000) with the note the OpenAPI connector adds", () => {
    const long = { content: [{ type: "text", text: "y".repeat(3_000_000) }] };
    expect(toToolResultValue(long).text).toBe(
      `${"y".repeat(100_000)}\n[cut: the response had 3000000 characters]`,
    );
    expect(toToolResultValue(long, 200).text).toBe(
      `${"y".repeat(200)}\n[cut: the response had 3000000 characters]`,
    );
    expect(() => toToolResultValue({ ...long, isError: true }, 200)).toThrow(
      `${"y".repeat(200)}\n[cut: the response had 3000000 characters]`,
    );
    expect(toToolResultValue({ content: [{ type: "text", text: "short" }] }, 200).text).toBe("short");
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

  it("checks every field it maps, naming the first that is malformed", () => {
    const refused = (result: McpCallResult, problem: string) =>
      expect(() => toToolResultValue(result)).toThrow(
        new ToolError(`its result is malformed: ${problem}`, { code: "mcp_call_failed" }),
      );
    refused({ content: "text" }, "content is not an array");
    refused({ content: [null] }, "content[0] is not an object");
    refused({ content: [[]] }, "content[0] is not an object");
    refused(
      { content: [{ text: "no type" }] },
      "content[0].type is not one of text, image, audio, resource, resource_link",
    );
    refused({ content: [{ type: "text", text: "a" }, { type: "text" }] }, "content[1].text is not a string");
    refused(
      { content: [{ type: "image", data: 1, mimeType: "image/png" }] },
      "content[0].data is not a string",
    );
    refused({ content: [{ type: "image", data: "AAAA" }] }, "content[0].mimeType is not a string");
    refused({ content: [{ type: "audio", mimeType: "audio/wav" }] }, "content[0].data is not a string");
    refused({ content: [{ type: "audio", data: "AA==" }] }, "content[0].mimeType is not a string");
    refused({ content: [{ type: "resource" }] }, "content[0].resource is not an object");
    refused(
      { content: [{ type: "resource", resource: { text: "t" } }] },
      "content[0].resource.uri is not a string",
    );
    refused(
      { content: [{ type: "resource", resource: { uri: "u", mimeType: 3, text: "t" } }] },
      "content[0].resource.mimeType is not a string",
    );
    refused(
      { content: [{ type: "resource", resource: { uri: "u", blob: 3 } }] },
      "content[0].resource has neither a string text nor a string blob",
    );
    refused({ content: [{ type: "resource_link", uri: "u" }] }, "content[0].name is not a string");
    refused({ content: [{ type: "resource_link", name: "n" }] }, "content[0].uri is not a string");
    refused({ structuredContent: null }, "structuredContent is not an object");
    refused({ structuredContent: "3" }, "structuredContent is not an object");
    refused({ structuredContent: [3] }, "structuredContent is not an object");
    refused({ isError: "true" }, "isError is not a boolean");
    // Malformed wins over isError, as the SDK's schema refused the result before it was read.
    refused({ isError: true, content: [{ type: "text", text: 1 }] }, "content[0].text is not a string");
  });

  it("reads an absent content as empty and leaves fields it does not map alone", () => {
    expect(toToolResultValue({}).text).toBe("");
    expect(toToolResultValue({ structuredContent: { a: 1 } }).text).toBe('{"a":1}');
    const output = toToolResultValue({
      content: [
        { type: "text", text: "a", annotations: { priority: 7 }, _meta: { x: 1 } },
        { type: "image", data: "AAAA", mimeType: "" },
      ],
      isError: false,
      _meta: { anything: true },
    } as McpCallResult);
    expect(output.text).toBe("a");
    expect(output.images).toEqual([{ data: "AAAA" }]);
  });

  it("has the SDK check only that the result is an object, and keeps it as it came", () => {
    const result = { content: [{ type: "text", text: 5 }], extra: 1 };
    expect(McpCallResultShape.safeParse(result)).toEqual({ success: true, data: result });
    expect(McpCallResultShape.safeParse(result).data).toBe(result);
    for (const value of ["text", 3, null, [], undefined])
      expect(McpCallResultShape.safeParse(value).success).toBe(false);
  });
});
