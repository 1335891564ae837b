import type { JsonSchemaObject } from "@patchbay/protocol";

const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"] as const;

/**
 * One operation of an OpenAPI document, ready to call: where its arguments go and its tool
 * schema (path, query and header parameters by name, the JSON request body as `body`).
 *
 * @example
 * ```ts
 * const [op] = operationsOf(document);
 * op.name; // "getPet"
 * ```
 */
export interface OpenApiOperation {
  name: string;
  method: (typeof METHODS)[number];
  path: string;
  description: string;
  /** The operation's `summary`, what a UI shows while the call runs; absent when it has none. */
  summary?: string;
  parameters: { name: string; in: "path" | "query" | "header" | "cookie"; required: boolean }[];
  hasBody: boolean;
  inputSchema: JsonSchemaObject;
}

type Json = Record<string, unknown>;

/** Follows local `$ref`s (`#/components/...`) into a copy; a cycle is cut to `{}`. */
function resolveRefs(document: Json, node: unknown, seen: string[] = []): unknown {
  if (Array.isArray(node)) return node.map((item) => resolveRefs(document, item, seen));
  if (node === null || typeof node !== "object") return node;
  const ref = (node as Json).$ref;
  if (typeof ref === "string") {
    if (!ref.startsWith("#/") || seen.includes(ref)) return {};
    let target: unknown = document;
    for (const raw of ref.slice(2).split("/")) {
      const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
      target = target && typeof target === "object" ? (target as Json)[key] : undefined;
    }
    return target === undefined ? {} : resolveRefs(document, target, [...seen, ref]);
  }
  const out: Json = {};
  for (const [key, value] of Object.entries(node)) out[key] = resolveRefs(document, value, seen);
  return out;
}

function toolName(method: string, path: string, operationId: unknown): string {
  const raw = typeof operationId === "string" && operationId ? operationId : `${method}_${path}`;
  return (
    raw
      .replace(/[^A-Za-z0-9-]+/g, "_")
      .replace(/^_+|_+$/g, "")
      .slice(0, 60) || method
  );
}

/**
 * Every operation of an OpenAPI 3 document (`paths` × methods), its `$ref`s resolved. Throws an
 * `Error` naming the problem when the document is not OpenAPI 3.
 *
 * @example
 * ```ts
 * operationsOf({ openapi: "3.0.3", info: { title: "t", version: "1" }, paths: { "/pets": { get: { operationId: "listPets" } } } });
 * ```
 */
export function operationsOf(document: Json): OpenApiOperation[] {
  if (typeof document.openapi !== "string" || !document.openapi.startsWith("3.")) {
    throw new Error(`is not an OpenAPI 3 document (openapi: ${JSON.stringify(document.openapi ?? null)})`);
  }
  const paths = (document.paths ?? {}) as Json;
  const operations: OpenApiOperation[] = [];
  for (const [path, rawItem] of Object.entries(paths)) {
    const item = resolveRefs(document, rawItem) as Json;
    const shared = (Array.isArray(item.parameters) ? item.parameters : []) as Json[];
    for (const method of METHODS) {
      const op = item[method] as Json | undefined;
      if (!op || typeof op !== "object") continue;
      const own = (Array.isArray(op.parameters) ? op.parameters : []) as Json[];
      const byKey = new Map<string, Json>();
      for (const parameter of [...shared, ...own]) byKey.set(`${parameter.in}:${parameter.name}`, parameter);
      const properties: Json = {};
      const required: string[] = [];
      const parameters: OpenApiOperation["parameters"] = [];
      for (const parameter of byKey.values()) {
        const name = String(parameter.name);
        const where = parameter.in as OpenApiOperation["parameters"][number]["in"];
        const isRequired = parameter.required === true || where === "path";
        parameters.push({ name, in: where, required: isRequired });
        const schema = { ...((parameter.schema as Json | undefined) ?? { type: "string" }) };
        if (typeof parameter.description === "string" && schema.description === undefined)
          schema.description = parameter.description;
        properties[name] = schema;
        if (isRequired) required.push(name);
      }
      const body = op.requestBody as Json | undefined;
      const content = (body?.content ?? {}) as Json;
      const jsonBody = (content["application/json"] ??
        Object.entries(content).find(([type]) => type.endsWith("+json"))?.[1]) as Json | undefined;
      const hasBody = jsonBody !== undefined;
      if (hasBody) {
        properties.body = {
          ...((jsonBody.schema as Json | undefined) ?? {}),
          description: String(body?.description ?? "The request body (JSON)."),
        };
        if (body?.required === true) required.push("body");
      }
      const inputSchema: JsonSchemaObject = { type: "object", properties };
      if (required.length > 0) inputSchema.required = required;
      const description =
        [op.summary, op.description].filter((text) => typeof text === "string" && text).join(". ") ||
        `${method.toUpperCase()} ${path}`;
      const summary = typeof op.summary === "string" ? op.summary.trim() : "";
      operations.push({
        name: toolName(method, path, op.operationId),
        method,
        path,
        description,
        ...(summary ? { summary } : {}),
        parameters,
        hasBody,
        inputSchema,
      });
    }
  }
  return operations;
}
