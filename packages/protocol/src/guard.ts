// A few hand-written checks that decode a JSON value the way the zod schemas of this package
// do (same rules, same output: unknown fields dropped, defaults filled in, the path of the first
// wrong field), without zod, so a browser page need not load zod to read server frames.
// `server-frame-guards.test.ts` keeps them in step with the zod schemas over the shared vectors.

/** The first thing a guard found wrong: a dotted field path ("" for the value itself) and why. */
export class GuardIssue {
  declare readonly path: string;
  declare readonly message: string;
  constructor(path: string, message: string) {
    this.path = path;
    this.message = message;
  }
}

/** Checks a value at a path; returns the decoded value or throws a {@link GuardIssue}. */
export type Guard<T = unknown> = (value: unknown, path: string) => T;

type Shape = Record<string, Guard>;

const at = (path: string, key: string | number): string => (path === "" ? String(key) : `${path}.${key}`);

/** How an error names the kind of a value it did not expect: "null", "an array", "an object", "a string"... */
export function kind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function fail(path: string, message: string): never {
  throw new GuardIssue(path, message);
}

function expected(path: string, what: string, value: unknown): never {
  return fail(path, value === undefined ? `${what} is required` : `expected ${what}, got ${kind(value)}`);
}

/** A string of `min` to `max` UTF-16 code units, optionally matching a pattern. */
export const str =
  (
    min = 0,
    max = Number.POSITIVE_INFINITY,
    pattern?: RegExp,
    patternMessage = "has the wrong form",
  ): Guard<string> =>
  (value, path) => {
    if (typeof value !== "string") expected(path, "a string", value);
    if (value.length < min)
      fail(path, min === 1 ? "must not be empty" : `must be at least ${min} characters`);
    if (value.length > max) fail(path, `must be at most ${max} characters`);
    if (pattern && !pattern.test(value)) fail(path, patternMessage);
    return value;
  };

/** A safe integer of at least `min`. */
export const int =
  (min: number): Guard<number> =>
  (value, path) => {
    if (typeof value !== "number" || !Number.isSafeInteger(value)) expected(path, "an integer", value);
    if (value < min) fail(path, `must be at least ${min}`);
    return value;
  };

export const bool: Guard<boolean> = (value, path) =>
  typeof value === "boolean" ? value : expected(path, "a boolean", value);

/** One of a few constant strings. */
export const oneOf =
  <T extends string>(...values: T[]): Guard<T> =>
  (value, path) =>
    values.includes(value as T)
      ? (value as T)
      : fail(path, `must be one of ${values.map((v) => `"${v}"`).join(", ")}`);

/** Any JSON object (not an array), kept as it is. */
export const record: Guard<Record<string, unknown>> = (value, path) =>
  typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : expected(path, "an object", value);

/** A list whose every element fits `item`, at most `max` long. */
export const arr =
  <T>(item: Guard<T>, max = Number.POSITIVE_INFINITY): Guard<T[]> =>
  (value, path) => {
    if (!Array.isArray(value)) expected(path, "an array", value);
    if (value.length > max) fail(path, `must have at most ${max} elements`);
    return value.map((element, index) => item(element, at(path, index)));
  };

/** The key may be absent. */
export const opt =
  (guard: Guard): Guard =>
  (value, path) =>
    value === undefined ? undefined : guard(value, path);

/** `null`, or a value that fits `guard`. */
export const nullable =
  (guard: Guard): Guard =>
  (value, path) =>
    value === null ? null : guard(value, path);

/** An absent value becomes `fallback` (a fresh copy each time). */
export const withDefault =
  (guard: Guard, fallback: () => unknown): Guard =>
  (value, path) =>
    value === undefined ? fallback() : guard(value, path);

/** An object with these fields, checked in this order; other fields are dropped. */
export const obj =
  (shape: Shape): Guard<Record<string, unknown>> =>
  (value, path) => {
    const input = record(value, path);
    const output: Record<string, unknown> = {};
    for (const key in shape) {
      const decoded = shape[key]!(input[key], at(path, key));
      if (decoded !== undefined) output[key] = decoded;
    }
    return output;
  };

/** An object told apart by a constant field (`type`, `kind`), like zod's discriminated union. */
export const tagged =
  (key: string, forms: Record<string, Guard>): Guard =>
  (value, path) => {
    const tag = record(value, path)[key];
    const form = typeof tag === "string" && Object.hasOwn(forms, tag) ? forms[tag] : undefined;
    if (!form)
      return fail(
        at(path, key),
        `must be one of ${Object.keys(forms)
          .map((v) => `"${v}"`)
          .join(", ")}`,
      );
    return form(value, path);
  };

/**
 * Exactly one of several forms. When none fits, the complaint of the first form that is wrong
 * about a field the value has wins (the form the value was closest to); when several fit, the
 * value itself is refused.
 */
export const exactlyOne =
  (message: string, ...forms: Guard[]): Guard =>
  (value, path) => {
    const input = record(value, path);
    const fits: unknown[] = [];
    const issues: GuardIssue[] = [];
    for (const form of forms) {
      try {
        fits.push(form(value, path));
      } catch (error) {
        if (!(error instanceof GuardIssue)) throw error;
        issues.push(error);
      }
    }
    if (fits.length === 1) return fits[0];
    if (fits.length > 1) return fail(path, message);
    const has = (issue: GuardIssue) => {
      const field = issue.path.slice(path === "" ? 0 : path.length + 1).split(".")[0]!;
      return field !== "" && input[field] !== undefined;
    };
    throw issues.find(has) ?? issues[0];
  };

/** A field that must be left out (zod's `z.never().optional()`), with the complaint when it is not. */
export const absent =
  (message: string): Guard<undefined> =>
  (value, path) =>
    value === undefined ? undefined : fail(path, message);

/** A constant. */
export const literal =
  <T extends string>(constant: T): Guard<T> =>
  (value, path) =>
    value === constant ? constant : fail(path, `must be "${constant}"`);
