import type { z } from "zod";

/**
 * The snake_case spelling of a key: `baseURL` -> `base_url`, `toolCalls` -> `tool_calls`;
 * snake_case keys come back unchanged.
 */
export function snakeCase(key: string): string {
  return key
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1_$2")
    .replace(/([a-z0-9])([A-Z])/g, "$1_$2")
    .toLowerCase();
}

/** A key written in the old camelCase style, at `path` (the file's own spelling). */
export interface DeprecatedKey {
  path: (string | number)[];
  written: string;
  preferred: string;
}

/** What {@link normalizeKeys} found besides the value. */
export interface KeyReport {
  deprecated: DeprecatedKey[];
  /** Unknown keys with a close known one, by the dotted path of the unknown key (schema spelling). */
  suggestions: Map<string, string>;
}

/**
 * Rewrites the keys of a config value (parsed YAML) to the spelling its zod schema uses, so a
 * file can be written in snake_case throughout while the schema keeps the names the code uses
 * (`base_url` -> `baseURL`). Old camelCase keys are accepted and reported as deprecated. Keys of
 * records (headers, tool arguments) are data and are left alone; unknown keys are left for the
 * schema to refuse, with the closest known key as a suggestion. One rule for the whole agent
 * file: a new section only needs snake_case keys in its schema (or camelCase: both read).
 */
export function normalizeKeys(value: unknown, schema: z.ZodType): { value: unknown; report: KeyReport } {
  const report: KeyReport = { deprecated: [], suggestions: new Map() };
  return { value: walk(value, schema, [], [], report), report };
}

function walk(
  value: unknown,
  schema: z.ZodType | undefined,
  path: (string | number)[],
  written: (string | number)[],
  report: KeyReport,
): unknown {
  const s = unwrap(schema, value);
  if (s === undefined) return value;
  const def = (s as unknown as { def: Record<string, any> }).def;
  if (def.type === "array" && Array.isArray(value)) {
    return value.map((item, i) => walk(item, def.element, [...path, i], [...written, i], report));
  }
  if (def.type === "record" && isPlainObject(value)) {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [
        k,
        walk(v, def.valueType, [...path, k], [...written, k], report),
      ]),
    );
  }
  if (def.type !== "object" || !isPlainObject(value)) return value;
  const shape = def.shape as Record<string, z.ZodType>;
  const known = Object.keys(shape);
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    const field =
      key in shape ? key : known.find((k) => snakeCase(k) === key || snakeCase(k) === snakeCase(key));
    if (field === undefined) {
      const suggestion = closest(key, known.map(snakeCase));
      if (suggestion !== undefined) report.suggestions.set([...path, key].join("."), suggestion);
      out[key] = child;
      continue;
    }
    if (key !== snakeCase(key)) {
      report.deprecated.push({ path: [...written, key], written: key, preferred: snakeCase(key) });
    }
    out[field] = walk(child, shape[field], [...path, field], [...written, key], report);
  }
  return out;
}

/** The schema under defaults, optionals, pipes and lazies; for a union, the option `value` picks. */
function unwrap(schema: z.ZodType | undefined, value: unknown): z.ZodType | undefined {
  let s = schema as any;
  for (let depth = 0; s && depth < 20; depth++) {
    const def = s.def;
    if (
      ["default", "optional", "nullable", "readonly", "catch", "prefault", "nonoptional"].includes(def.type)
    ) {
      s = def.innerType;
    } else if (def.type === "pipe") {
      s = def.in;
    } else if (def.type === "lazy") {
      s = def.getter();
    } else if (def.type === "union") {
      const options = def.options as any[];
      const key = def.discriminator as string | undefined;
      const picked =
        key !== undefined && isPlainObject(value)
          ? options.find((o) => {
              const field = unwrap(o, value) as any;
              const literal = field?.def?.shape?.[key]?.def;
              return literal?.values?.includes((value as Record<string, unknown>)[key]);
            })
          : undefined;
      if (!picked) return undefined;
      s = picked;
    } else {
      return s;
    }
  }
  return s;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * The known key closest to `input` when it is close enough to be a typo (edit distance at most
 * a third of its length, at least 1), else undefined. The CLI uses it for flags too.
 */
export function closest(input: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(1, Math.floor(input.length / 3));
  for (const candidate of known) {
    const distance = editDistance(snakeCase(input), snakeCase(candidate));
    if (distance <= bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** Optimal string alignment distance: a swap of two neighbouring letters counts once. */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) => [i, ...Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) rows[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]![j] = d;
    }
  }
  return rows[a.length]![b.length]!;
}
