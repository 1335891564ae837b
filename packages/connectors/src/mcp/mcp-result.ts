import { ToolError, type ToolImage, ToolOutput } from "@patchbay/tools";

interface McpContent {
  type: string;
  text?: string;
  data?: string;
  mimeType?: string;
  uri?: string;
  name?: string;
  resource?: { uri?: string; text?: string; mimeType?: string };
}

/**
 * The part of an MCP `tools/call` result the mapping reads.
 *
 * @example
 * ```ts
 * const result: McpCallResult = { content: [{ type: "text", text: "hi" }] };
 * ```
 */
export interface McpCallResult {
  content?: unknown;
  structuredContent?: unknown;
  isError?: boolean;
}

/**
 * What the model is shown for an MCP tool result: text blocks as text, image blocks as images
 * (checked by the executor: type sniffed, 5 MB at most), embedded text resources as text, other
 * resources and audio as a one-line mention. When there is `structuredContent`, the text is its
 * JSON (text blocks beside it are the server's rendering of the same and are left out). `isError` throws a `ToolError` with the text, which the model reads.
 *
 * @example
 * ```ts
 * toToolResultValue({ content: [{ type: "text", text: "3" }] }); // ToolOutput { text: "3", images: [] }
 * ```
 */
export function toToolResultValue(result: McpCallResult): ToolOutput {
  const texts: string[] = [];
  const images: ToolImage[] = [];
  const content = Array.isArray(result.content) ? (result.content as McpContent[]) : [];
  for (const block of content) {
    switch (block.type) {
      case "text":
        if (typeof block.text === "string") texts.push(block.text);
        break;
      case "image":
        if (typeof block.data === "string") {
          images.push(
            block.mimeType
              ? ({ data: block.data, mimeType: block.mimeType } as ToolImage)
              : { data: block.data },
          );
        }
        break;
      case "resource":
        if (typeof block.resource?.text === "string") texts.push(block.resource.text);
        else
          texts.push(
            `[resource ${block.resource?.uri ?? ""}${block.resource?.mimeType ? ` (${block.resource.mimeType})` : ""}]`,
          );
        break;
      case "resource_link":
        texts.push(`[${block.name ?? "resource"}](${block.uri ?? ""})`);
        break;
      default:
        texts.push(`[${block.type}${block.mimeType ? ` ${block.mimeType}` : ""} omitted]`);
    }
  }
  // The structured result is the result; the text blocks beside it are its rendering (the spec
  // has servers repeat it as text for clients without structured content).
  const structured = result.structuredContent;
  const text =
    structured !== undefined && structured !== null ? JSON.stringify(structured) : texts.join("\n");
  if (result.isError)
    throw new ToolError(text || "The tool reported an error without saying why.", { code: "mcp_tool_error" });
  return new ToolOutput({ text, images });
}
