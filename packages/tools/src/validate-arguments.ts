import { type OutputUnit, type Schema, type SchemaDraft, Validator } from "@cfworker/json-schema";
import {
  alternatives,
  boundMessage,
  EXTRA_FORBIDDEN,
  FIELD_REQUIRED,
  formatMessage,
  issueLine,
  patternMessage,
  quote,
  typeMessage,
  unionMessage,
} from "./issue-wording";

/**
 * The outcome of checking arguments: the value to hand to the tool (with defaults filled in), or
 * one line per problem as `path: message`.
 *
 * @example
 * ```ts
 * const r: ValidationResult<{ seats: number }> = validateArguments(schema, { seats: 3 });
 * if (r.ok) r.value.seats;
 * ```
 */
export type ValidationResult<T> = { ok: true; value: T } | { ok: false; issues: string[] };

type SchemaNode = Record<string, unknown>;

const validators = new WeakMap<object, Validator>();

/** The format name a `pattern` is checked under once it runs in an installed engine. */
export const PATTERN_FORMAT_PREFIX = "pattern:";

// The schema actually validated: `setPatternEngine` (pattern-engine.ts, Node entry only) installs
// a rewrite whose `pattern` keywords run in its engine; without one the schema as given. Installed
// from there, so a page's validator chunk carries no pattern-engine code.
let rewriteSchema: ((schema: SchemaNode) => SchemaNode) | undefined;

/** Installs the rewrite applied to each schema right before validation (`undefined` removes it). */
export function useSchemaRewrite(rewrite: ((schema: SchemaNode) => SchemaNode) | undefined): void {
  rewriteSchema = rewrite;
}

function draftOf(schema: SchemaNode): SchemaDraft {
  const uri = typeof schema.$schema === "string" ? schema.$schema : "";
  if (uri.includes("draft-04")) return "4";
  if (uri.includes("draft-06") || uri.includes("draft-07")) return "7";
  if (uri.includes("2019-09")) return "2019-09";
  return "2020-12";
}

function validatorFor(schema: SchemaNode): Validator {
  let validator = validators.get(schema);
  if (!validator) {
    // shortCircuit off: report every problem, not just the first.
    validator = new Validator(schema as Schema, draftOf(schema), false);
    validators.set(schema, validator);
  }
  return validator;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  // defineProperty keeps a "__proto__" key as data instead of swapping the prototype; for any
  // other key a plain assignment does the same, several times faster.
  if (key === "__proto__")
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

function copyJson(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(copyJson);
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) setOwn(out, key, copyJson(value[key]));
  return out;
}

// Fills `default`s of absent properties, following `properties` into nested objects, so that a
// plain JSON Schema tool gets the same defaults a zod one would.
function applyDefaults(schema: unknown, value: unknown, depth = 0): void {
  if (!isPlainObject(schema) || !isPlainObject(value) || depth > 32) return;
  const properties = schema.properties;
  if (!isPlainObject(properties)) return;
  for (const key of Object.keys(properties)) {
    const property = properties[key];
    if (!isPlainObject(property)) continue;
    if (!Object.hasOwn(value, key) && "default" in property) setOwn(value, key, copyJson(property.default));
    applyDefaults(property, value[key], depth + 1);
  }
}

function segments(pointer: string): string[] {
  const body = pointer.startsWith("#") ? pointer.slice(1) : pointer;
  if (body === "") return [];
  return body
    .slice(1)
    .split("/")
    .map((segment) => {
      let decoded = segment;
      try {
        decoded = decodeURIComponent(segment);
      } catch {
        // keep the raw segment; the path is still readable
      }
      return decoded.replace(/~1/g, "/").replace(/~0/g, "~");
    });
}

function resolveRef(root: SchemaNode, ref: unknown): unknown {
  if (typeof ref !== "string" || !ref.startsWith("#")) return undefined;
  return walk(root, root, segments(ref));
}

function walk(root: SchemaNode, start: unknown, path: readonly string[]): unknown {
  let node: unknown = start;
  for (const segment of path) {
    if (!isPlainObject(node) && !Array.isArray(node)) return undefined;
    if (segment === "$ref" && isPlainObject(node) && typeof node.$ref === "string") {
      node = resolveRef(root, node.$ref);
      continue;
    }
    if (segment === "$recursiveRef") {
      node = root;
      continue;
    }
    if (!Object.hasOwn(node as object, segment)) return undefined;
    node = (node as Record<string, unknown>)[segment];
  }
  return node;
}

function instanceAt(instance: unknown, path: readonly string[]): unknown {
  let node = instance;
  for (const segment of path) {
    if (node === null || typeof node !== "object" || !Object.hasOwn(node, segment)) return undefined;
    node = (node as Record<string, unknown>)[segment];
  }
  return node;
}

function within(location: string, ancestor: string): boolean {
  return location === ancestor || location.startsWith(`${ancestor}/`);
}

const WRAPPER_KEYWORDS = new Set([
  "properties",
  "patternProperties",
  "additionalProperties",
  "unevaluatedProperties",
  "items",
  "prefixItems",
  "additionalItems",
  "unevaluatedItems",
  "$ref",
  "$recursiveRef",
  "allOf",
  "dependentSchemas",
  "dependencies",
  "then",
  "else",
  "propertyNames",
]);
const CHOICE_KEYWORDS = new Set(["anyOf", "oneOf", "not"]);

interface Context {
  root: SchemaNode;
  instance: unknown;
  errors: readonly OutputUnit[];
}

function keywordMessage(unit: OutputUnit, ctx: Context): { path: string[]; message: string } {
  const path = segments(unit.instanceLocation);
  const keywordPath = segments(unit.keywordLocation);
  const node = walk(ctx.root, ctx.root, keywordPath.slice(0, -1));
  const schema = isPlainObject(node) ? node : {};
  const value = instanceAt(ctx.instance, path);
  const fallback = { path, message: unit.error };
  switch (unit.keyword) {
    case "type": {
      const types = Array.isArray(schema.type) ? (schema.type as string[]) : [String(schema.type)];
      return { path, message: unionMessage(types.map((t) => [typeMessage(t, value)])) };
    }
    case "required": {
      const key = /required property "(.*)"\.$/s.exec(unit.error)?.[1];
      return key === undefined ? fallback : { path: [...path, key], message: FIELD_REQUIRED };
    }
    case "dependentRequired":
    case "dependantRequired":
    case "dependencies": {
      const match = /has "(.*)" but does not have "(.*)"\.$/s.exec(unit.error);
      if (!match) return fallback;
      return { path: [...path, match[2] ?? ""], message: `${FIELD_REQUIRED} when '${match[1]}' is present` };
    }
    case "false": {
      const extra = ctx.errors.some(
        (other) =>
          (other.keyword === "additionalProperties" || other.keyword === "unevaluatedProperties") &&
          other.instanceLocation === unit.instanceLocation.slice(0, unit.instanceLocation.lastIndexOf("/")),
      );
      return { path, message: extra ? EXTRA_FORBIDDEN : "Input is not permitted" };
    }
    case "const":
      return { path, message: `Input should be ${quote(schema.const)}` };
    case "enum":
      return { path, message: `Input should be ${alternatives((schema.enum as unknown[]) ?? [])}` };
    case "maximum":
    case "minimum": {
      const side = unit.keyword === "maximum" ? "max" : "min";
      const exclusive = side === "max" ? schema.exclusiveMaximum === true : schema.exclusiveMinimum === true;
      return {
        path,
        message: boundMessage("number", side, schema[unit.keyword] as number, { inclusive: !exclusive }),
      };
    }
    case "exclusiveMaximum":
    case "exclusiveMinimum": {
      const limit = schema[unit.keyword];
      if (typeof limit !== "number") return fallback;
      const side = unit.keyword === "exclusiveMaximum" ? "max" : "min";
      return { path, message: boundMessage("number", side, limit, { inclusive: false }) };
    }
    case "multipleOf":
      return { path, message: `Input should be a multiple of ${String(schema.multipleOf)}` };
    case "minLength":
    case "maxLength":
    case "minItems":
    case "maxItems":
    case "minProperties":
    case "maxProperties": {
      const kind = unit.keyword.endsWith("Length")
        ? "string"
        : unit.keyword.endsWith("Items")
          ? "array"
          : "object";
      const side = unit.keyword.startsWith("max") ? "max" : "min";
      return { path, message: boundMessage(kind, side, schema[unit.keyword] as number) };
    }
    case "pattern":
      return { path, message: patternMessage(schema.pattern) };
    case "format": {
      const name = String(schema.format);
      // A pattern run by the installed engine (see pattern-engine.ts) reads as a pattern.
      if (name.startsWith(PATTERN_FORMAT_PREFIX))
        return { path, message: patternMessage(name.slice(PATTERN_FORMAT_PREFIX.length)) };
      return { path, message: formatMessage(name) };
    }
    case "uniqueItems":
      return { path, message: "Array items should be unique" };
    case "contains":
      return { path, message: "Array should contain at least one matching item" };
    case "not":
      return { path, message: "Input should not match the excluded schema" };
    case "anyOf":
    case "oneOf": {
      const branches = Array.isArray(schema[unit.keyword]) ? (schema[unit.keyword] as unknown[]) : [];
      const matches = /\((\d+) matches\)/.exec(unit.error);
      if (unit.keyword === "oneOf" && matches && Number(matches[1]) > 1) {
        return { path, message: "Input should match exactly one of the allowed schemas" };
      }
      const perBranch = branches.map((_branch, i) =>
        leafUnits(
          ctx.errors.filter((other) => within(other.keywordLocation, `${unit.keywordLocation}/${i}`)),
          ctx,
        ).map((leaf) => {
          const described = keywordMessage(leaf, ctx);
          const relative = described.path.slice(path.length).join(".");
          return relative ? issueLine(relative, described.message) : described.message;
        }),
      );
      return { path, message: unionMessage(perBranch) };
    }
    default:
      return fallback;
  }
}

function leafUnits(units: readonly OutputUnit[], _ctx: Context): OutputUnit[] {
  // Problems inside a union are summarised by the union's own line.
  const choices = units.filter((u) => CHOICE_KEYWORDS.has(u.keyword));
  const visible = units.filter(
    (u) => !choices.some((c) => c !== u && u.keywordLocation.startsWith(`${c.keywordLocation}/`)),
  );
  return visible.filter(
    (u) =>
      !WRAPPER_KEYWORDS.has(u.keyword) ||
      !visible.some(
        (other) => !WRAPPER_KEYWORDS.has(other.keyword) && within(other.instanceLocation, u.instanceLocation),
      ),
  );
}

/**
 * Checks tool arguments against a plain JSON Schema (drafts 4, 7, 2019-09 and 2020-12, chosen by
 * `$schema`, 2020-12 when absent) with `@cfworker/json-schema`, which builds no code at runtime
 * and so works under a strict Content-Security-Policy. Absent properties with a `default` are
 * filled in first; the input is never changed. Problems come back one per line in the form
 * `seats: Input should be less than or equal to 9`.
 *
 * @example
 * ```ts
 * validateArguments({ type: "object", properties: { seats: { type: "integer", maximum: 9 } } }, { seats: 12 });
 * // { ok: false, issues: ["seats: Input should be less than or equal to 9"] }
 * ```
 */
export function validateArguments<T = Record<string, unknown>>(
  jsonSchema: Record<string, unknown>,
  args: unknown,
): ValidationResult<T> {
  const value = copyJson(args);
  applyDefaults(jsonSchema, value);
  const root = rewriteSchema?.(jsonSchema) ?? jsonSchema;
  const result = validatorFor(root).validate(value);
  if (result.valid) return { ok: true, value: value as T };
  const ctx: Context = { root, instance: value, errors: result.errors };
  const lines: string[] = [];
  for (const unit of leafUnits(result.errors, ctx)) {
    const { path, message } = keywordMessage(unit, ctx);
    const line = issueLine(path.join("."), message);
    if (!lines.includes(line)) lines.push(line);
  }
  return { ok: false, issues: lines };
}
