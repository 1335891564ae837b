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

function sameJson(text: string, value: unknown): boolean {
  try {
    return JSON.stringify(JSON.parse(text)) === JSON.stringify(value);
  } catch {
    return false;
  }
}

/**
 * What the model is shown for an MCP tool result: text blocks as text, image blocks as images
 * (checked by the executor: type sniffed, 5 MB at most), embedded text resources as text, other
 * resources and audio as a one-line mention, `structuredContent` as JSON text (a text block that
 * only repeats it is dropped). `isError` throws a `ToolError` with the text, which the model reads.
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
  if (result.structuredContent !== undefined && result.structuredContent !== null) {
    const json = JSON.stringify(result.structuredContent);
    const kept = texts.filter((text) => !sameJson(text, result.structuredContent));
    texts.length = 0;
    texts.push(...kept, json);
  }
  const text = texts.join("\n");
  if (result.isError)
    throw new ToolError(text || "The tool reported an error without saying why.", { code: "mcp_tool_error" });
  return new ToolOutput({ text, images });
}
