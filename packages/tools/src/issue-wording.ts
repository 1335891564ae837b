/**
 * The wording shared by every validator: Pydantic's register ("Input should be ..."), so that a
 * model sees the same kind of sentence whatever schema library the tool was written with.
 */

/** A value as it appears in a message: strings in single quotes, the rest as JSON. */
export function quote(value: unknown): string {
  if (typeof value === "string") return `'${value}'`;
  if (typeof value === "bigint") return String(value);
  return JSON.stringify(value) ?? String(value);
}

/** `'a'`, `'a' or 'b'`, `'a', 'b' or 'c'`. */
export function alternatives(values: readonly unknown[]): string {
  const quoted = values.map(quote);
  if (quoted.length <= 1) return quoted[0] ?? "nothing";
  return `${quoted.slice(0, -1).join(", ")} or ${quoted[quoted.length - 1]}`;
}

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

const TYPE_NAMES: Record<string, string> = {
  string: "a valid string",
  number: "a valid number",
  integer: "a valid integer",
  int: "a valid integer",
  bigint: "a valid integer",
  boolean: "a valid boolean",
  object: "a valid object",
  record: "a valid object",
  array: "a valid array",
  tuple: "a valid array",
  null: "null",
  date: "a valid date",
};

/** `Input should be a valid string`, or the integer message that says why a number is not one. */
export function typeMessage(expected: string, input: unknown): string {
  if (
    (expected === "integer" || expected === "int") &&
    typeof input === "number" &&
    Number.isFinite(input) &&
    !Number.isInteger(input)
  ) {
    return "Input should be a valid integer, got a number with a fractional part";
  }
  return `Input should be ${TYPE_NAMES[expected] ?? `a valid ${expected}`}`;
}

/** The message for a field that is absent. */
export const FIELD_REQUIRED = "Field required";

/** The message for a key the schema does not allow. */
export const EXTRA_FORBIDDEN = "Extra inputs are not permitted";

/** The message for a value that fits none of a union's branches, when they cannot be listed. */
export const NO_UNION_MATCH = "Input should match one of the allowed schemas";

/** The message for a failed custom check that carries no message of its own. */
export const VALUE_INVALID = "Input is not valid";

/** Bounds on a number, a string's length, an array's or an object's size. */
export function boundMessage(
  kind: "number" | "string" | "array" | "object",
  side: "max" | "min",
  limit: number | bigint,
  options: { inclusive?: boolean; exact?: boolean } = {},
): string {
  if (kind === "number") {
    const relation = side === "max" ? "less than" : "greater than";
    return `Input should be ${relation}${options.inclusive === false ? "" : " or equal to"} ${limit}`;
  }
  const n = Number(limit);
  const [subject, noun] =
    kind === "string"
      ? ["String", "character"]
      : kind === "array"
        ? ["Array", "item"]
        : ["Object", "property"];
  const counted = noun === "property" ? `${n} ${n === 1 ? "property" : "properties"}` : plural(n, noun);
  if (options.exact) return `${subject} should have exactly ${counted}`;
  return `${subject} should have ${side === "max" ? "at most" : "at least"} ${counted}`;
}

/** The source of a regular expression given as a RegExp, `/source/flags` text or plain source. */
export function patternSource(pattern: unknown): string {
  if (pattern instanceof RegExp) return pattern.source;
  const text = String(pattern);
  const match = /^\/(.*)\/[a-z]*$/s.exec(text);
  return match ? (match[1] ?? text) : text;
}

/** `String should match pattern '^[A-Z]{2}\d{1,4}$'`. */
export function patternMessage(pattern: unknown): string {
  return `String should match pattern '${patternSource(pattern)}'`;
}

const FORMAT_NAMES: Record<string, string> = {
  email: "a valid email address",
  url: "a valid URL",
  uri: "a valid URI",
  "uri-reference": "a valid URI reference",
  uuid: "a valid UUID",
  guid: "a valid UUID",
  datetime: "a valid datetime",
  "date-time": "a valid datetime",
  date: "a valid date",
  time: "a valid time",
  duration: "a valid duration",
  ipv4: "a valid IPv4 address",
  ipv6: "a valid IPv6 address",
  hostname: "a valid hostname",
  base64: "valid base64",
  emoji: "an emoji",
};

/** `Input should be a valid email address`, and the like for other string formats. */
export function formatMessage(format: string): string {
  return `Input should be ${FORMAT_NAMES[format] ?? `a valid ${format}`}`;
}

/**
 * One message for a union whose branches each failed with one message: `Input should be a valid
 * string or a valid number`. Falls back to a general sentence when the branches say more.
 */
export function unionMessage(branchMessages: readonly (readonly string[])[]): string {
  const prefix = "Input should be ";
  if (branchMessages.length === 0) return NO_UNION_MATCH;
  const parts: string[] = [];
  for (const messages of branchMessages) {
    const [only] = messages;
    if (messages.length !== 1 || only === undefined || !only.startsWith(prefix)) return NO_UNION_MATCH;
    const part = only.slice(prefix.length);
    if (!parts.includes(part)) parts.push(part);
  }
  if (parts.length === 1) return `${prefix}${parts[0]}`;
  return `${prefix}${parts.slice(0, -1).join(", ")} or ${parts[parts.length - 1]}`;
}

/** A dotted path with array indices (`passengers.0.name`); empty at the root. */
export function dottedPath(path: readonly PropertyKey[]): string {
  return path.map((segment) => String(segment)).join(".");
}

/** `path: message`, or the message alone at the root. */
export function issueLine(path: string, message: string): string {
  return path ? `${path}: ${message}` : message;
}
