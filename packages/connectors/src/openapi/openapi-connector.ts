import { readFile } from "node:fs/promises";
import { resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { ToolError, ToolOutput } from "@patchbay/tools";
import { parse as parseYaml } from "yaml";
import { type ConnectorTool, defineConnector } from "../connector";
import { cutText, DEFAULT_MAX_RESPONSE_CHARS } from "../cut-text";
import { type OpenApiConfig, OpenApiConfigSchema } from "./openapi-config";
import { type OpenApiOperation, operationsOf } from "./openapi-operations";

async function loadDocument(
  spec: string,
  signalMs = 15_000,
): Promise<{ document: Record<string, unknown>; base: string }> {
  let text: string;
  let base: string;
  if (/^https?:\/\//.test(spec)) {
    const response = await fetch(spec, { signal: AbortSignal.timeout(signalMs) });
    if (!response.ok) throw new Error(`the OpenAPI document ${spec} answered HTTP ${response.status}`);
    text = await response.text();
    base = spec;
  } else {
    const path = resolve(spec);
    text = await readFile(path, "utf8");
    base = pathToFileURL(path).href;
  }
  const document = (
    spec.endsWith(".json") || text.trimStart().startsWith("{") ? JSON.parse(text) : parseYaml(text)
  ) as unknown;
  if (document === null || typeof document !== "object")
    throw new Error(`the OpenAPI document ${spec} is not an object`);
  return { document: document as Record<string, unknown>, base };
}

function baseUrlOf(config: OpenApiConfig, document: Record<string, unknown>, documentUrl: string): string {
  if (config.base_url) return config.base_url;
  const servers = document.servers as { url?: unknown }[] | undefined;
  const first = servers?.[0]?.url;
  if (typeof first === "string" && first) {
    // A relative server URL is relative to where the document was fetched from (not a file).
    let url: URL | undefined;
    try {
      url = new URL(first, documentUrl.startsWith("file:") ? undefined : documentUrl);
    } catch {
      url = undefined;
    }
    if (url && (url.protocol === "http:" || url.protocol === "https:")) return url.href;
  }
  throw new Error("no base URL: set 'base_url' or give the document a 'servers' entry with an http(s) URL");
}

function requestOf(
  operation: OpenApiOperation,
  baseUrl: string,
  headers: Record<string, string>,
  args: Record<string, unknown>,
) {
  let path = operation.path;
  const query = new URLSearchParams();
  const sent: Record<string, string> = { accept: "application/json, */*;q=0.5", ...headers };
  for (const parameter of operation.parameters) {
    const value = args[parameter.name];
    if (value === undefined) continue;
    const text = typeof value === "string" ? value : JSON.stringify(value);
    if (parameter.in === "path") {
      // A URL resolves "." and ".." (encoded too): the call would reach another endpoint.
      if (/^(\.|%2e){1,2}$/i.test(text)) {
        throw new ToolError(`The path parameter ${parameter.name} cannot be "${text}".`, {
          code: "invalid_arguments",
        });
      }
      path = path.replace(`{${parameter.name}}`, encodeURIComponent(text));
    } else if (parameter.in === "query") {
      if (Array.isArray(value))
        for (const item of value)
          query.append(parameter.name, typeof item === "string" ? item : JSON.stringify(item));
      else query.append(parameter.name, text);
    } else if (parameter.in === "header") sent[parameter.name.toLowerCase()] = text;
  }
  const url = new URL(baseUrl.replace(/\/?$/, "/") + path.replace(/^\//, ""));
  for (const [key, value] of query) url.searchParams.append(key, value);
  let body: string | undefined;
  if (operation.hasBody && args.body !== undefined) {
    body = JSON.stringify(args.body);
    sent["content-type"] = "application/json";
  }
  return {
    url,
    init: { method: operation.method.toUpperCase(), headers: sent, ...(body !== undefined ? { body } : {}) },
  };
}

/** Redirects followed at most, within the API's origin. */
const MAX_REDIRECTS = 5;

/**
 * `fetch` that follows redirects within the API's own origin only, so the request's headers (its
 * credentials) never go to another host; a redirect elsewhere is a tool error. A 303, and a 301
 * or 302 answering a POST, continue as a GET without the body, as `fetch` itself does.
 */
async function fetchWithinOrigin(url: URL, init: RequestInit, signal: AbortSignal): Promise<Response> {
  let current = url;
  let request = init;
  for (let hops = 0; ; hops++) {
    const response = await fetch(current, { ...request, signal, redirect: "manual" });
    const location = response.headers.get("location");
    if (response.status < 300 || response.status > 399 || location === null) return response;
    await response.body?.cancel();
    const next = new URL(location, current);
    if (next.origin !== url.origin) {
      throw new ToolError(
        `The API redirected to another origin (${next.origin}); the call was not sent there with the API's credentials.`,
        { code: "http_redirect_refused" },
      );
    }
    if (hops >= MAX_REDIRECTS) {
      throw new ToolError(`The API redirected more than ${MAX_REDIRECTS} times.`, {
        code: "http_redirect_loop",
      });
    }
    const asGet = response.status === 303 || (request.method === "POST" && response.status <= 302);
    if (asGet) {
      const { body: _body, ...rest } = request;
      request = { ...rest, method: "GET" };
    }
    current = next;
  }
}

async function resultOf(response: Response, maxChars: number): Promise<string | ToolOutput> {
  const type = response.headers.get("content-type") ?? "";
  if (type.startsWith("image/")) {
    return new ToolOutput({
      text: `${response.status} ${type}`,
      images: [new Uint8Array(await response.arrayBuffer())],
    });
  }
  const text = cutText(await response.text(), maxChars);
  if (!response.ok) {
    throw new ToolError(
      `The API answered HTTP ${response.status} ${response.statusText}${text ? `: ${text}` : ""}`,
      {
        code: `http_${response.status}`,
      },
    );
  }
  return text;
}

/**
 * The OpenAPI connector: every operation of an OpenAPI 3 document becomes a tool named by its
 * `operationId` (else `<method>_<path>`), its parameters and JSON request body (`body`) the tool's
 * JSON Schema. Calls go to `base_url` with the configured headers; a 2xx response is the result
 * (images as images), any other status a tool error the model reads. GET and HEAD are read-only;
 * the other methods ask for approval unless the entry's `approval` says otherwise.
 *
 * @example
 * ```ts
 * const set = await ConnectorSet.start(prepareConnectors(
 *   [{ name: "pets", openapi: { spec: "./petstore.json", headers: { authorization: "Bearer ${PETS_TOKEN}" } } }],
 *   { kinds: [openApiConnector], env: process.env },
 * ));
 * ```
 */
export const openApiConnector = defineConnector({
  name: "openapi",
  configSchema: OpenApiConfigSchema,
  async connect(config) {
    const { document, base } = await loadDocument(config.spec);
    const operations = operationsOf(document);
    const baseUrl = baseUrlOf(config, document, base);
    const maxChars = config.max_response_chars ?? DEFAULT_MAX_RESPONSE_CHARS;
    const tools: ConnectorTool[] = operations.map((operation) => ({
      name: operation.name,
      description: operation.description,
      inputSchema: operation.inputSchema,
      annotations: { readOnlyHint: operation.method === "get" || operation.method === "head" },
      ...(operation.summary ? { displayTitle: operation.summary } : {}),
      run: async (args, signal) => {
        const { url, init } = requestOf(operation, baseUrl, config.headers ?? {}, args);
        let response: Response;
        try {
          response = await fetchWithinOrigin(url, init, signal);
        } catch (error) {
          if (signal.aborted || error instanceof ToolError) throw error;
          throw new ToolError(`The API could not be reached: ${(error as Error).message}`, {
            code: "http_unreachable",
          });
        }
        return resultOf(response, maxChars);
      },
    }));
    return { tools: () => tools, close: async () => {} };
  },
});
