// Shared by the tests that keep a zod-free guard in step with its zod schema
// (server-frame-guards.test.ts, tool-result-frame.test.ts): every way to break a valid frame
// one field at a time, down to nested fields.

/** What a field is replaced by: every other JSON kind, empty and too-long strings, odd numbers. */
export const REPLACEMENTS: unknown[] = [
  null,
  true,
  0,
  -1,
  1.5,
  2 ** 60,
  "",
  "x".repeat(300),
  [],
  {},
  [1],
  { a: 1 },
];

/** Stands for "the field removed" among the replacements. */
export const REMOVE = Symbol("remove");

/** Every path to a value inside a JSON value. */
export function paths(value: unknown, prefix: (string | number)[] = []): (string | number)[][] {
  if (Array.isArray(value)) return value.flatMap((v, i) => [[...prefix, i], ...paths(v, [...prefix, i])]);
  if (typeof value === "object" && value !== null)
    return Object.entries(value).flatMap(([k, v]) => [[...prefix, k], ...paths(v, [...prefix, k])]);
  return [];
}

/** A copy of `frame` with the value at `path` replaced, or removed. */
export function mutate(
  frame: unknown,
  path: (string | number)[],
  replacement: unknown | typeof REMOVE,
): unknown {
  const copy = structuredClone(frame) as Record<string | number, unknown>;
  let parent: Record<string | number, unknown> = copy;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
  const last = path.at(-1)!;
  if (replacement === REMOVE) {
    if (Array.isArray(parent)) parent.splice(last as number, 1);
    else delete parent[last];
  } else parent[last] = replacement;
  return copy;
}
