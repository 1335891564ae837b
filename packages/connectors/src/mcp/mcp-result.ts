import { ToolError, type ToolImage, ToolOutput } from "@patchbay/tools";
import { z } from "zod";
import { cutText, DEFAULT_MAX_RESPONSE_CHARS } from "../cut-text";

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
  isError?: unknown;
}

/**
 * The result schema the connector hands the SDK's `callTool`: a JSON object, kept as it came.
 * The SDK's default (`CallToolResultSchema`, each content block parsed against a union of five
 * types into a new object) is garbage per call; `toToolResultValue` checks every field it maps
 * instead, as it maps it. The SDK still checks `structuredContent` against the tool's output
 * schema after this.
 */
export const McpCallResultShape = z.custom<McpCallResult>(
  (value) => typeof value === "object" && value !== null && !Array.isArray(value),
  { message: "the result is not a JSON object" },
);

type Block = Record<string, unknown>;

const isObject = (value: unknown): value is Block =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Where a field is, built only for the error: `content[2].text`, `content[0].resource.uri`. */
function pathOf(index: number, inResource: boolean, key?: string): string {
  return `content[${index}]${inResource ? ".resource" : ""}${key === undefined ? "" : `.${key}`}`;
}

function malformed(path: string, problem: string): never {
  throw new ToolError(`its result is malformed: ${path} ${problem}`, { code: "mcp_call_failed" });
}

function stringAt(block: Block, key: string, index: number, inResource = false): string {
  const value = block[key];
  if (typeof value !== "string") malformed(pathOf(index, inResource, key), "is not a string");
  return value;
}

/** One content block as text (pushed to `texts`) or an image (pushed to `images`), checked as it is read. */
function mapBlock(block: unknown, index: number, texts: string[], images: ToolImage[]): void {
  if (!isObject(block)) malformed(pathOf(index, false), "is not an object");
  switch (block.type) {
    case "text":
      texts.push(stringAt(block, "text", index));
      break;
    case "image": {
      // The executor checks the data itself: base64, a known image type, 5 MB at most.
      const data = stringAt(block, "data", index);
      const mimeType = stringAt(block, "mimeType", index);
      images.push(mimeType ? ({ data, mimeType } as ToolImage) : { data });
      break;
    }
    case "audio":
      stringAt(block, "data", index);
      texts.push(`[audio ${stringAt(block, "mimeType", index)} omitted]`);
      break;
    case "resource": {
      const resource = block.resource;
      if (!isObject(resource)) malformed(pathOf(index, false, "resource"), "is not an object");
      const uri = stringAt(resource, "uri", index, true);
      const mimeType = resource.mimeType;
      if (mimeType !== undefined && typeof mimeType !== "string")
        malformed(pathOf(index, true, "mimeType"), "is not a string");
      if (typeof resource.text === "string") texts.push(resource.text);
      else if (typeof resource.blob === "string")
        texts.push(`[resource ${uri}${mimeType ? ` (${mimeType})` : ""}]`);
      else malformed(pathOf(index, true), "has neither a string text nor a string blob");
      break;
    }
    case "resource_link":
      texts.push(`[${stringAt(block, "name", index)}](${stringAt(block, "uri", index)})`);
      break;
    default:
      malformed(pathOf(index, false, "type"), "is not one of text, image, audio, resource, resource_link");
  }
}

/**
 * What the model is shown for an MCP tool result: text blocks as text, image blocks as images
 * (checked by the executor: type sniffed, 5 MB at most), embedded text resources as text, other
 * resources and audio as a one-line mention. When there is `structuredContent`, the text is its
 * JSON (text blocks beside it are the server's rendering of the same and are left out). `isError`
 * throws a `ToolError` with the text, which the model reads.
 *
 * Every field it maps is checked as the MCP schema has it (a content block's `type` one of the five
 * kinds, `text` a string, an image's `data` and `mimeType` strings, ...; `content` an array or
 * absent, `structuredContent` an object or absent, `isError` a boolean or absent): a result that
 * is not throws a `ToolError` (`mcp_call_failed`) naming the field, e.g. `content[2].text`.
 *
 * The text (and an error's text) is cut at `maxChars` (the entry's `max_response_chars`, default
 * 100 000) with the note the OpenAPI connector adds: `[cut: the response had N characters]`.
 *
 * @example
 * ```ts
 * toToolResultValue({ content: [{ type: "text", text: "3" }] }); // ToolOutput { text: "3", images: [] }
 * ```
 */
export function toToolResultValue(
  result: McpCallResult,
  maxChars: number = DEFAULT_MAX_RESPONSE_CHARS,
): ToolOutput {
  const texts: string[] = [];
  const images: ToolImage[] = [];
  const { content, structuredContent: structured, isError } = result;
  if (content !== undefined) {
    if (!Array.isArray(content)) malformed("content", "is not an array");
    for (let i = 0; i < content.length; i++) mapBlock(content[i], i, texts, images);
  }
  if (structured !== undefined && !isObject(structured)) malformed("structuredContent", "is not an object");
  if (isError !== undefined && typeof isError !== "boolean") malformed("isError", "is not a boolean");
  // The structured result is the result; the text blocks beside it are its rendering (the spec
  // has servers repeat it as text for clients without structured content).
  const text = cutText(structured !== undefined ? JSON.stringify(structured) : texts.join("\n"), maxChars);
  if (isError)
    throw new ToolError(text || "The tool reported an error without saying why.", { code: "mcp_tool_error" });
  return new ToolOutput({ text, images });
}
