import { type ValidationResult, validateArguments } from "./validate-arguments";

/**
 * The arguments of a flat schema (an object of string, number, integer, boolean or null fields),
 * copied with their defaults filled in, or `undefined` when this check cannot say they fit.
 */
type FastCheck = (args: unknown) => Record<string, unknown> | undefined;

// Keywords that describe and do not constrain: a schema with any other keyword is left to
// `validateArguments`.
const ANNOTATIONS = new Set([
  "$schema",
  "$comment",
  "title",
  "description",
  "examples",
  "deprecated",
  "readOnly",
  "writeOnly",
]);
const ROOT_KEYWORDS = new Set([...ANNOTATIONS, "type", "properties", "required", "additionalProperties"]);
const FIELD_KEYWORDS = new Set([
  ...ANNOTATIONS,
  "type",
  "enum",
  "const",
  "default",
  "minimum",
  "maximum",
  "minLength",
  "maxLength",
]);
const FIELD_TYPES = new Set(["string", "number", "integer", "boolean", "null"]);

type Primitive = string | number | boolean | null;

function isPrimitive(value: unknown): value is Primitive {
  const type = typeof value;
  return value === null || type === "string" || type === "number" || type === "boolean";
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// The string's length in code points, as the validator counts it (a surrogate pair is one).
function codePoints(text: string): number {
  let count = 0;
  for (let i = 0; i < text.length; i++) {
    count++;
    const code = text.charCodeAt(i);
    if (code >= 0xd800 && code <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) i++;
  }
  return count;
}

/** One field's check, or undefined when its schema uses something this check does not know. */
function compileField(schema: unknown): ((value: Primitive) => boolean) | undefined {
  if (!isPlainObject(schema)) return undefined;
  for (const key of Object.keys(schema)) if (!FIELD_KEYWORDS.has(key)) return undefined;
  const { type, enum: choices, const: constant, minimum, maximum, minLength, maxLength } = schema;
  const types = type === undefined ? undefined : Array.isArray(type) ? type : [type];
  if (types?.some((name) => typeof name !== "string" || !FIELD_TYPES.has(name))) return undefined;
  if (choices !== undefined && !(Array.isArray(choices) && choices.every(isPrimitive))) return undefined;
  if (constant !== undefined && !isPrimitive(constant)) return undefined;
  for (const bound of [minimum, maximum, minLength, maxLength]) {
    if (bound !== undefined && (typeof bound !== "number" || !Number.isFinite(bound))) return undefined;
  }
  if ("default" in schema && !isPrimitive(schema.default)) return undefined;
  const typeOk = (value: Primitive): boolean => {
    if (types === undefined) return true;
    const kind = value === null ? "null" : typeof value;
    for (const name of types) {
      if (name === kind) return true;
      if (name === "integer" && Number.isInteger(value)) return true;
    }
    return false;
  };
  return (value) => {
    if (!typeOk(value)) return false;
    if (constant !== undefined && value !== constant) return false;
    // `===`, as the validator compares: NaN matches nothing.
    if (choices !== undefined && !(choices as Primitive[]).some((choice) => choice === value)) return false;
    if (typeof value === "number") {
      // NaN fails both comparisons and goes to the full validator.
      if (minimum !== undefined && !(value >= (minimum as number))) return false;
      if (maximum !== undefined && !(value <= (maximum as number))) return false;
    } else if (typeof value === "string" && (minLength !== undefined || maxLength !== undefined)) {
      const length = codePoints(value);
      if (minLength !== undefined && length < (minLength as number)) return false;
      if (maxLength !== undefined && length > (maxLength as number)) return false;
    }
    return true;
  };
}

/**
 * A check for a flat object schema: `type: "object"`, `properties` whose fields are primitives
 * (type, enum, const, default, minimum, maximum, minLength, maxLength), `required`, and a boolean
 * `additionalProperties`. Undefined for any other schema. It accepts only what the full
 * validator accepts (it is stricter: a value it does not accept goes to the full validator,
 * which decides and words the problems).
 */
export function compileFastCheck(schema: Record<string, unknown>): FastCheck | undefined {
  for (const key of Object.keys(schema)) if (!ROOT_KEYWORDS.has(key)) return undefined;
  const { type, properties = {}, required = [], additionalProperties = true } = schema;
  if (type !== "object" || !isPlainObject(properties) || typeof additionalProperties !== "boolean")
    return undefined;
  if (!Array.isArray(required) || !required.every((key) => typeof key === "string")) return undefined;
  const fields = new Map<string, (value: Primitive) => boolean>();
  const defaults: [string, Primitive][] = [];
  for (const key of Object.keys(properties)) {
    if (key === "__proto__") return undefined;
    const field = compileField(properties[key]);
    if (field === undefined) return undefined;
    fields.set(key, field);
    const property = properties[key] as Record<string, unknown>;
    if ("default" in property) defaults.push([key, property.default as Primitive]);
  }
  const requiredKeys = required as string[];
  return (args) => {
    if (!isPlainObject(args)) return undefined;
    const value: Record<string, unknown> = {};
    for (const key of Object.keys(args)) {
      const field = args[key];
      if (key === "__proto__" || !isPrimitive(field)) return undefined;
      const check = fields.get(key);
      if (check === undefined ? !additionalProperties : !check(field)) return undefined;
      value[key] = field;
    }
    for (const [key, fallback] of defaults) {
      if (Object.hasOwn(value, key)) continue;
      if (!fields.get(key)!(fallback)) return undefined;
      value[key] = fallback;
    }
    for (const key of requiredKeys) if (!Object.hasOwn(value, key)) return undefined;
    return value;
  };
}

const fastChecks = new WeakMap<object, FastCheck | null>();

/**
 * `validateArguments` with a quick way through for flat schemas (most tools' and MCP servers'):
 * arguments a compiled check accepts are copied with their defaults and returned without running
 * the full validator, which builds location strings and error lists for every keyword it
 * visits. Anything else, and every refusal, goes to `validateArguments`, so the result is the
 * same. The first call for a schema runs the full validator too, so a schema it cannot read
 * still fails there (at registration). The Node entry installs it for JSON Schema tools and
 * exports it as `validateArguments` (a server checks hosted and page tools' arguments with it).
 *
 * @example
 * ```ts
 * import { validateArguments } from "@patchbay/tools"; // this function, from the Node entry
 * validateArguments({ type: "object", properties: { seats: { type: "integer", maximum: 9 } } }, { seats: 2 });
 * // { ok: true, value: { seats: 2 } }
 * ```
 */
export function validateArgumentsFast<T = Record<string, unknown>>(
  jsonSchema: Record<string, unknown>,
  args: unknown,
): ValidationResult<T> {
  const check = fastChecks.get(jsonSchema);
  if (check === undefined) {
    const result = validateArguments<T>(jsonSchema, args);
    fastChecks.set(jsonSchema, compileFastCheck(jsonSchema) ?? null);
    return result;
  }
  const value = check?.(args);
  return value === undefined ? validateArguments<T>(jsonSchema, args) : { ok: true, value: value as T };
}
