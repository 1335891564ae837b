import type { NormalizedToolCall } from "@patchbay/protocol";

/**
 * How a dispatch handler's input is built from a call: an object or array whose values are
 * references (`"arguments.city"`, `"ctx.user.id"`, `"tool_call_id"`...), nested mappings, or
 * numbers, booleans and null that pass unchanged.
 *
 * @example
 * ```ts
 * const mapping: ToolInputMapping = { city: "arguments.city", user_id: "ctx.user.id", options: { units: "units" }, retries: 2 };
 * ```
 */
export type ToolInputMapping =
  | string
  | number
  | boolean
  | null
  | readonly ToolInputMapping[]
  | { readonly [key: string]: ToolInputMapping };

const INDEX = /^(0|[1-9]\d*)$/;

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  // defineProperty keeps a "__proto__" key as data instead of swapping the prototype.
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

// Selected values are copied so a handler that changes its input cannot change the call or the
// caller's context. Only plain data is copied; anything else (a Date, a class instance) is shared.
function copy(value: unknown, depth = 0): unknown {
  if (depth > 64) return value;
  if (Array.isArray(value)) return value.map((item) => copy(item, depth + 1));
  if (!isPlainObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value)) setOwn(out, key, copy(value[key], depth + 1));
  return out;
}

/**
 * Follows a complete dotted path. Every segment must name an own property of an object, or a
 * canonical, in-range index of an array; otherwise the result is `null`, never the parent.
 */
function select(root: unknown, path: string): unknown {
  let current: unknown = root;
  for (const segment of path.split(".")) {
    if (segment === "") return null;
    if (Array.isArray(current)) {
      if (!INDEX.test(segment)) return null;
      const index = Number(segment);
      if (index >= current.length) return null;
      current = current[index];
    } else if (current !== null && typeof current === "object") {
      if (!Object.hasOwn(current, segment)) return null;
      current = (current as Record<string, unknown>)[segment];
    } else {
      return null;
    }
  }
  return current === undefined ? null : copy(current);
}

function resolveReference(
  reference: string,
  call: NormalizedToolCall,
  context: Record<string, unknown> | undefined,
): unknown {
  if (reference === "arguments") return copy(call.arguments);
  if (reference.startsWith("arguments.")) return select(call.arguments, reference.slice("arguments.".length));
  if (reference === "call") return copy(call);
  if (reference.startsWith("call.")) return select(call, reference.slice("call.".length));
  if (reference === "tool_name") return call.name;
  if (reference === "tool_call_id") return call.id;
  if (reference.startsWith("ctx.")) return select(context ?? {}, reference.slice("ctx.".length));
  if (context && Object.hasOwn(context, reference)) {
    const value = context[reference];
    return value === undefined ? null : copy(value);
  }
  return reference;
}

function project(
  mapping: unknown,
  call: NormalizedToolCall,
  context: Record<string, unknown> | undefined,
  depth: number,
): unknown {
  if (typeof mapping === "string") return resolveReference(mapping, call, context);
  if (depth > 64) return null;
  if (Array.isArray(mapping)) return mapping.map((item) => project(item, call, context, depth + 1));
  if (mapping !== null && typeof mapping === "object") {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(mapping)) {
      setOwn(out, key, project((mapping as Record<string, unknown>)[key], call, context, depth + 1));
    }
    return out;
  }
  return mapping === undefined ? null : mapping;
}

/**
 * Builds a dispatch handler's input from a mapping, per call. A string in the mapping is a
 * reference:
 *
 * | Reference | Selects |
 * | --- | --- |
 * | `arguments` | the parsed arguments |
 * | `arguments.x.0.y` | a dotted path inside them (array indices are dotted too) |
 * | `call`, `call.x` | the normalized call, or a path inside it |
 * | `tool_name`, `tool_call_id` | the tool's name, the call's id |
 * | `ctx.a.b.0.c` | a dotted path inside `context` |
 * | any other string | the context key of that name if present, else the string itself |
 *
 * A path resolves completely or gives `null`: a missing root or field, an index out of range or
 * negative or not canonical (`01`), a step through a scalar, an empty segment or a trailing dot
 * all give `null`, never a parent object. Objects and arrays in the mapping resolve recursively;
 * numbers, booleans and null pass unchanged. A value selected from context is copied as is and
 * never read as another reference. Keys such as `__proto__` are plain data on both sides: only
 * own properties are followed, and output objects get them as own properties.
 *
 * This is a projection, not a secret filter: `arguments`, `call` and `ctx.user` copy whole
 * objects, private fields included.
 *
 * @example
 * ```ts
 * projectToolInput(
 *   { city: "arguments.city", user_id: "ctx.user.id", name: "ctx.user.profile.name", call_id: "tool_call_id" },
 *   { call, context: { user: { profile: { name: "Ada" } } } },
 * );
 * // { city: "Berlin", user_id: null, name: "Ada", call_id: "call_1" }
 * ```
 */
export function projectToolInput(
  mapping: ToolInputMapping,
  source: { call: NormalizedToolCall; context?: Record<string, unknown> },
): unknown {
  return project(mapping, source.call, source.context, 0);
}
