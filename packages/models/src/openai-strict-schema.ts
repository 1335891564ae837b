type Schema = Record<string, unknown>;

function isSchema(value: unknown): value is Schema {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// OpenAI's strict mode rejects these; a schema using them is sent without `strict`.
const UNSUPPORTED = [
  "allOf",
  "not",
  "if",
  "then",
  "else",
  "dependentRequired",
  "dependentSchemas",
  "prefixItems",
];

const MAX_DEPTH = 64;

// Primitive types widen to `["string", "null"]`; objects and arrays, whose schemas carry
// `properties` or `items`, take the `anyOf` form.
function nullable(schema: Schema): Schema {
  const type = schema.type;
  if (type === "object" || type === "array") return { anyOf: [schema, { type: "null" }] };
  if (type === undefined && Array.isArray(schema.anyOf) && Object.keys(schema).length === 1) {
    return allowsNull(schema) ? schema : { anyOf: [...schema.anyOf, { type: "null" }] };
  }
  if (typeof type === "string" && schema.const === undefined) {
    const widened: Schema = { ...schema, type: type === "null" ? "null" : [type, "null"] };
    if (Array.isArray(schema.enum) && !schema.enum.includes(null)) widened.enum = [...schema.enum, null];
    return widened;
  }
  if (Array.isArray(type) && schema.const === undefined) {
    const widened: Schema = { ...schema, type: type.includes("null") ? type : [...type, "null"] };
    if (Array.isArray(schema.enum) && !schema.enum.includes(null)) widened.enum = [...schema.enum, null];
    return widened;
  }
  return { anyOf: [schema, { type: "null" }] };
}

function strictify(schema: unknown, depth: number): Schema | undefined {
  if (!isSchema(schema) || depth > MAX_DEPTH) return undefined;
  if (UNSUPPORTED.some((key) => key in schema)) return undefined;
  const out: Schema = { ...schema };
  if ("oneOf" in out) {
    // Strict mode knows only anyOf; for tool arguments "one of" and "any of" ask the same of the model.
    out.anyOf = out.oneOf;
    delete out.oneOf;
  }
  if (Array.isArray(out.anyOf)) {
    const branches = out.anyOf.map((branch) => strictify(branch, depth + 1));
    if (branches.some((branch) => branch === undefined)) return undefined;
    out.anyOf = branches;
  }
  for (const key of ["$defs", "definitions"]) {
    const defs = out[key];
    if (!isSchema(defs)) continue;
    const converted: Schema = {};
    for (const [name, def] of Object.entries(defs)) {
      const strict = strictify(def, depth + 1);
      if (strict === undefined) return undefined;
      converted[name] = strict;
    }
    out[key] = converted;
  }
  if ("items" in out) {
    const items = strictify(out.items, depth + 1);
    if (items === undefined) return undefined;
    out.items = items;
  }
  const isObject = out.type === "object" || (Array.isArray(out.type) && out.type.includes("object"));
  if (isObject || "properties" in out) {
    // A free-form object (no properties, or any extra keys allowed) cannot be made strict.
    if (!isSchema(out.properties)) return undefined;
    if (out.additionalProperties !== undefined && out.additionalProperties !== false) return undefined;
    const required = new Set(Array.isArray(out.required) ? out.required : []);
    const properties: Schema = {};
    for (const [name, property] of Object.entries(out.properties)) {
      const strict = strictify(property, depth + 1);
      if (strict === undefined) return undefined;
      properties[name] = required.has(name) ? strict : nullable(strict);
    }
    out.properties = properties;
    out.required = Object.keys(properties);
    out.additionalProperties = false;
  }
  return out;
}

/**
 * Rewrites a tool's JSON Schema the way OpenAI's strict mode (Structured Outputs) requires:
 * `additionalProperties: false` on every object, every property listed in `required`, and each
 * property that was optional made nullable instead (`type: ["string", "null"]`, or an `anyOf`
 * with `{ type: "null" }`), so the model sends `null` where it would have left a key out.
 * `oneOf` becomes `anyOf`. Returns `undefined` for a schema strict mode cannot express (a
 * free-form object, `allOf`, `not`, conditionals): that tool is then sent without `strict`.
 *
 * @example
 * ```ts
 * toStrictJsonSchema({ type: "object", properties: { city: { type: "string" } } });
 * // { type: "object", properties: { city: { type: ["string", "null"] } }, required: ["city"], additionalProperties: false }
 * ```
 */
export function toStrictJsonSchema(schema: Record<string, unknown>): Record<string, unknown> | undefined {
  return strictify(schema, 0);
}

function allowsNull(schema: Schema): boolean {
  const type = schema.type;
  if (type === "null" || (Array.isArray(type) && type.includes("null"))) return true;
  if (Array.isArray(schema.enum) && schema.enum.includes(null)) return true;
  if (Array.isArray(schema.anyOf) && schema.anyOf.some((b) => isSchema(b) && allowsNull(b))) return true;
  if (Array.isArray(schema.oneOf) && schema.oneOf.some((b) => isSchema(b) && allowsNull(b))) return true;
  return false;
}

function strip(value: unknown, schema: unknown, depth: number): unknown {
  if (!isSchema(schema) || depth > MAX_DEPTH) return value;
  if (Array.isArray(value)) return value.map((item) => strip(item, schema.items, depth + 1));
  if (!isSchema(value) || !isSchema(schema.properties)) return value;
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const out: Schema = {};
  for (const [key, item] of Object.entries(value)) {
    const property = schema.properties[key];
    if (item === null && !required.has(key) && isSchema(property) && !allowsNull(property)) continue;
    out[key] = strip(item, property, depth + 1);
  }
  return out;
}

/**
 * Undoes what strict mode did to the arguments: drops the `null` the model had to send for a
 * property the tool's original schema made optional (and did not allow to be null), so the tool
 * sees the arguments its own schema describes.
 *
 * @example
 * ```ts
 * stripStrictNulls({ city: "Oslo", unit: null }, schema); // { city: "Oslo" } when `unit` was optional
 * ```
 */
export function stripStrictNulls(
  args: Record<string, unknown>,
  originalSchema: Record<string, unknown>,
): Record<string, unknown> {
  return strip(args, originalSchema, 0) as Record<string, unknown>;
}
