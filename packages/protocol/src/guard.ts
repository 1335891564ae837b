// A few hand-written checks that decode a JSON value the way the zod schemas of this package
// do (same rules, same output: unknown fields dropped, defaults filled in, the path of the first
// wrong field), without zod, so a browser page need not load zod to read server frames.
// `server-frame-guards.test.ts` keeps them in step with the zod schemas over the shared vectors.

/**
 * The first thing a guard found wrong: a dotted field path from the value the guard was given
 * ("" for that value itself) and why.
 */
export class GuardIssue {
  declare readonly path: string;
  declare readonly message: string;
  constructor(path: string, message: string) {
    this.path = path;
    this.message = message;
  }
}

/**
 * Checks a value; returns the decoded value or throws a {@link GuardIssue}. A guard knows no path:
 * a nested guard's issue gets the field's name in front as it passes up through its object or
 * list (`within`), so a frame that is right builds no path string at all (one per field was most
 * of what a frame's checks allocated).
 */
export type Guard<T = unknown> = (value: unknown) => T;

type Shape = Record<string, Guard>;

/** `error` from the value at `key`, its path now starting at `key`; anything else as it was. */
function within(error: unknown, key: string | number): unknown {
  if (!(error instanceof GuardIssue)) return error;
  return new GuardIssue(error.path === "" ? String(key) : `${key}.${error.path}`, error.message);
}

/** How an error names the kind of a value it did not expect: "null", "an array", "an object", "a string"... */
export function kind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "object" ? "an object" : `a ${typeof value}`;
}

function fail(message: string, path = ""): never {
  throw new GuardIssue(path, message);
}

function expected(what: string, value: unknown): never {
  return fail(value === undefined ? `${what} is required` : `expected ${what}, got ${kind(value)}`);
}

/** A string of `min` to `max` UTF-16 code units, optionally matching a pattern. */
export const str =
  (
    min = 0,
    max = Number.POSITIVE_INFINITY,
    pattern?: RegExp,
    patternMessage = "has the wrong form",
  ): Guard<string> =>
  (value) => {
    if (typeof value !== "string") expected("a string", value);
    if (value.length < min) fail(min === 1 ? "must not be empty" : `must be at least ${min} characters`);
    if (value.length > max) fail(`must be at most ${max} characters`);
    if (pattern && !pattern.test(value)) fail(patternMessage);
    return value;
  };

/** A safe integer of at least `min`. */
export const int =
  (min: number): Guard<number> =>
  (value) => {
    if (typeof value !== "number" || !Number.isSafeInteger(value)) expected("an integer", value);
    if (value < min) fail(`must be at least ${min}`);
    return value;
  };

export const bool: Guard<boolean> = (value) =>
  typeof value === "boolean" ? value : expected("a boolean", value);

/** One of a few constant strings. */
export const oneOf =
  <T extends string>(...values: T[]): Guard<T> =>
  (value) =>
    values.includes(value as T)
      ? (value as T)
      : fail(`must be one of ${values.map((v) => `"${v}"`).join(", ")}`);

/** Any JSON object (not an array), kept as it is. */
export const record: Guard<Record<string, unknown>> = (value) =>
  typeof value === "object" && value !== null && !Array.isArray(value)
    ? (value as Record<string, unknown>)
    : expected("an object", value);

/** A list whose every element fits `item`, at most `max` long. */
export const arr =
  <T>(item: Guard<T>, max = Number.POSITIVE_INFINITY): Guard<T[]> =>
  (value) => {
    if (!Array.isArray(value)) expected("an array", value);
    if (value.length > max) fail(`must have at most ${max} elements`);
    const output: T[] = [];
    let index = 0;
    try {
      for (; index < value.length; index++) output.push(item(value[index]));
    } catch (error) {
      throw within(error, index);
    }
    return output;
  };

/** The key may be absent. */
export const opt =
  (guard: Guard): Guard =>
  (value) =>
    value === undefined ? undefined : guard(value);

/** `null`, or a value that fits `guard`. */
export const nullable =
  (guard: Guard): Guard =>
  (value) =>
    value === null ? null : guard(value);

/** An absent value becomes `fallback` (a fresh copy each time). */
export const withDefault =
  (guard: Guard, fallback: () => unknown): Guard =>
  (value) =>
    value === undefined ? fallback() : guard(value);

/** An object with these fields, checked in this order; other fields are dropped. */
export const obj =
  (shape: Shape): Guard<Record<string, unknown>> =>
  (value) => {
    const input = record(value);
    const output: Record<string, unknown> = {};
    let key = "";
    try {
      for (key in shape) {
        const decoded = shape[key]!(input[key]);
        if (decoded !== undefined) output[key] = decoded;
      }
    } catch (error) {
      throw within(error, key);
    }
    return output;
  };

/** An object told apart by a constant field (`type`, `kind`), like zod's discriminated union. */
export const tagged =
  (key: string, forms: Record<string, Guard>): Guard =>
  (value) => {
    const tag = record(value)[key];
    const form = typeof tag === "string" && Object.hasOwn(forms, tag) ? forms[tag] : undefined;
    if (!form)
      return fail(
        `must be one of ${Object.keys(forms)
          .map((v) => `"${v}"`)
          .join(", ")}`,
        key,
      );
    return form(value);
  };

/**
 * Exactly one of several forms. When none fits, the complaint of the first form that is wrong
 * about a field the value has wins (the form the value was closest to); when several fit, the
 * value itself is refused.
 */
export const exactlyOne =
  (message: string, ...forms: Guard[]): Guard =>
  (value) => {
    const input = record(value);
    const fits: unknown[] = [];
    const issues: GuardIssue[] = [];
    for (const form of forms) {
      try {
        fits.push(form(value));
      } catch (error) {
        if (!(error instanceof GuardIssue)) throw error;
        issues.push(error);
      }
    }
    if (fits.length === 1) return fits[0];
    if (fits.length > 1) return fail(message);
    const has = (issue: GuardIssue) => {
      const field = issue.path.split(".")[0]!;
      return field !== "" && input[field] !== undefined;
    };
    throw issues.find(has) ?? issues[0];
  };

/** A field that must be left out (zod's `z.never().optional()`), with the complaint when it is not. */
export const absent =
  (message: string): Guard<undefined> =>
  (value) =>
    value === undefined ? undefined : fail(message);

/** A constant. */
export const literal =
  <T extends string>(constant: T): Guard<T> =>
  (value) =>
    value === constant ? constant : fail(`must be "${constant}"`);
