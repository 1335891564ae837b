// The Gemini API takes function parameters as its `Schema`, a subset of the OpenAPI 3.0 schema
// object, and answers any other key (`$schema`, `additionalProperties`, ...) with a 400
// "Invalid JSON payload received. Unknown name ...". Tool schemas are JSON Schema (MCP tools carry
// `$schema` and `additionalProperties: false`), so they are converted before they are sent.

type JsonSchema = Record<string, unknown>;

/** The keys Gemini's `Schema` accepts that are copied as they are (after their own checks). */
const NUMBER_KEYS = [
  "minimum",
  "maximum",
  "minItems",
  "maxItems",
  "minLength",
  "maxLength",
  "minProperties",
  "maxProperties",
] as const;

/** The only `format`s the Gemini API (not Vertex) accepts; any other fails the request. */
const FORMATS = new Set(["enum", "date-time"]);

/** How deep a schema is converted; deeper parts become an object of any shape. */
const MAX_DEPTH = 32;

const isObject = (value: unknown): value is JsonSchema =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/**
 * Converts a tool's JSON Schema to the subset Gemini's `functionDeclarations[].parameters`
 * accepts (type, format, title, description, nullable, enum, properties, required, items, anyOf,
 * min/max counts and lengths, minimum/maximum, pattern, propertyOrdering). Recursively: local
 * `$ref`s are resolved (and `$defs`/`definitions` dropped), `const` becomes a one-value `enum`,
 * a type list such as `["string", "null"]` becomes `type` plus `nullable: true`, `oneOf` becomes
 * `anyOf`, an `allOf` is merged, and every other key (`$schema`, `$id`, `additionalProperties`,
 * `default`, `examples`, ...) is left out. Returns `undefined` for a root object without
 * properties: Gemini refuses an `OBJECT` with empty `properties`, and a function without
 * parameters is declared without them.
 *
 * @example
 * ```ts
 * toGeminiSchema({ $schema: "...", type: "object", properties: { q: { type: ["string", "null"] } }, additionalProperties: false });
 * // { type: "object", properties: { q: { type: "string", nullable: true } } }
 * ```
 */
export function toGeminiSchema(schema: unknown): JsonSchema | undefined {
  if (!isObject(schema)) return undefined;
  const converted = convert(schema, schema, 0, new Set());
  if (converted.type === "object" && !isObject(converted.properties)) return undefined;
  return converted;
}

function resolveRef(ref: string, root: JsonSchema): JsonSchema | undefined {
  if (ref === "#") return root;
  if (!ref.startsWith("#/")) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(2).split("/")) {
    const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    if (!isObject(node)) return undefined;
    node = node[key];
  }
  return isObject(node) ? node : undefined;
}

/**
 * Follows `$ref`s and merges `allOf`, so what is left is one schema to convert. A `$ref` already
 * being expanded further up (`seen`, which gets the ones followed here) is recursion: cut.
 */
function flatten(schema: JsonSchema, root: JsonSchema, seen: Set<string>): JsonSchema | undefined {
  let current = schema;
  while (typeof current.$ref === "string") {
    const target = seen.has(current.$ref) ? undefined : resolveRef(current.$ref, root);
    if (target === undefined) return undefined;
    seen.add(current.$ref);
    // Keys next to a `$ref` (a description) win over the target's.
    const { $ref: _ref, ...siblings } = current;
    current = { ...target, ...siblings };
  }
  if (Array.isArray(current.allOf)) {
    const { allOf, ...rest } = current;
    let merged: JsonSchema = rest;
    for (const part of allOf) {
      if (!isObject(part)) continue;
      const flat = flatten(part, root, seen);
      if (flat !== undefined) merged = mergeSchemas(merged, flat);
    }
    current = merged;
  }
  return current;
}

function mergeSchemas(a: JsonSchema, b: JsonSchema): JsonSchema {
  const merged: JsonSchema = { ...b, ...a };
  if (isObject(a.properties) || isObject(b.properties)) {
    merged.properties = { ...(b.properties as JsonSchema), ...(a.properties as JsonSchema) };
  }
  const required = [
    ...(Array.isArray(a.required) ? a.required : []),
    ...(Array.isArray(b.required) ? b.required : []),
  ];
  if (required.length > 0) merged.required = [...new Set(required)];
  return merged;
}

function convert(schema: JsonSchema, root: JsonSchema, depth: number, above: Set<string>): JsonSchema {
  const seen = new Set(above);
  const flat = depth < MAX_DEPTH ? flatten(schema, root, seen) : undefined;
  // An unresolvable or recursive `$ref`, or a schema nested too deep: any object.
  if (flat === undefined) return { type: "object" };
  const out: JsonSchema = {};
  let nullable = flat.nullable === true;

  // `type`: one name, or a list whose `null` becomes `nullable`.
  const types = (Array.isArray(flat.type) ? flat.type : [flat.type]).filter(
    (t): t is string => typeof t === "string",
  );
  if (types.includes("null")) nullable = true;
  const nonNull = types.filter((t) => t !== "null");
  if (nonNull.length === 1) out.type = nonNull[0];
  else if (nonNull.length > 1 && flat.anyOf === undefined && flat.oneOf === undefined) {
    out.anyOf = nonNull.map((type) => ({ type }));
  }

  if (typeof flat.title === "string") out.title = flat.title;
  if (typeof flat.description === "string") out.description = flat.description;
  if (typeof flat.format === "string" && FORMATS.has(flat.format)) out.format = flat.format;
  if (typeof flat.pattern === "string") out.pattern = flat.pattern;
  for (const key of NUMBER_KEYS) {
    if (typeof flat[key] === "number") out[key] = flat[key];
  }

  // `enum` holds strings in Gemini: `null` becomes `nullable`, other values are named in the description.
  const values = flat.const !== undefined ? [flat.const] : Array.isArray(flat.enum) ? flat.enum : undefined;
  if (values !== undefined) {
    if (values.includes(null)) nullable = true;
    const kept = values.filter((v) => v !== null);
    if (kept.length > 0 && kept.every((v) => typeof v === "string")) {
      out.enum = kept;
      out.type ??= "string";
    } else if (kept.length > 0) {
      const list = kept.map((v) => JSON.stringify(v)).join(", ");
      out.description = `${out.description === undefined ? "" : `${out.description} `}(one of: ${list})`;
    }
  }

  if (isObject(flat.properties)) {
    const properties: JsonSchema = {};
    for (const [name, child] of Object.entries(flat.properties)) {
      properties[name] = isObject(child) ? convert(child, root, depth + 1, seen) : {};
    }
    if (Object.keys(properties).length > 0) {
      out.properties = properties;
      out.type ??= "object";
      if (Array.isArray(flat.required)) {
        const required = flat.required.filter((r): r is string => typeof r === "string" && r in properties);
        if (required.length > 0) out.required = required;
      }
      if (Array.isArray(flat.propertyOrdering)) out.propertyOrdering = flat.propertyOrdering;
    }
  }

  if (isObject(flat.items)) out.items = convert(flat.items, root, depth + 1, seen);
  else if (Array.isArray(flat.items) || Array.isArray(flat.prefixItems)) {
    // A tuple: Gemini has none, so each element may be any of the tuple's schemas.
    const parts = ((flat.items ?? flat.prefixItems) as unknown[]).filter(isObject);
    if (parts.length === 1) out.items = convert(parts[0] as JsonSchema, root, depth + 1, seen);
    else if (parts.length > 1) out.items = { anyOf: parts.map((p) => convert(p, root, depth + 1, seen)) };
  }

  const alternatives = Array.isArray(flat.anyOf) ? flat.anyOf : Array.isArray(flat.oneOf) ? flat.oneOf : [];
  if (alternatives.length > 0) {
    const options: JsonSchema[] = [];
    for (const option of alternatives) {
      if (!isObject(option)) continue;
      if (option.type === "null") {
        nullable = true;
        continue;
      }
      options.push(convert(option, root, depth + 1, seen));
    }
    if (options.length === 1) {
      // `anyOf: [X, {type: "null"}]`, what optional fields usually look like: X, nullable.
      const [only] = options as [JsonSchema];
      for (const [key, value] of Object.entries(only)) {
        if (out[key] === undefined) out[key] = value;
      }
      if (only.nullable === true) nullable = true;
    } else if (options.length > 1) out.anyOf = options;
  }

  if (nullable) out.nullable = true;
  return out;
}
