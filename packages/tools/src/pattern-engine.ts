import { format } from "@cfworker/json-schema";
import { PATTERN_FORMAT_PREFIX, useSchemaRewrite } from "./validate-arguments";

/**
 * A regular-expression engine for the `pattern` keyword of argument schemas. The default is the
 * JavaScript engine, which backtracks: a pattern like `^(a|a)*$` takes exponential time on a
 * crafted string. A server that checks schemas declared by others installs a linear-time engine
 * (the Patchbay server installs RE2) with {@link setPatternEngine}. `compile` throws when it
 * cannot take the pattern; such a pattern is then left to the JavaScript engine.
 *
 * @example
 * ```ts
 * const engine: PatternEngine = { compile: (source) => new RE2(source, "u") };
 * ```
 */
export interface PatternEngine {
  compile(source: string): { test(input: string): boolean };
}

let engine: PatternEngine | undefined;

/**
 * Installs the engine every later {@link validateArguments} call runs `pattern` keywords with
 * (process-wide; `undefined` goes back to the JavaScript engine).
 *
 * @example
 * ```ts
 * setPatternEngine({ compile: (source) => new RE2(source, "u") });
 * ```
 */
export function setPatternEngine(next: PatternEngine | undefined): void {
  engine = next;
  rewritten = new WeakMap();
  useSchemaRewrite(next ? linearSchema : undefined);
}

// The schema validateArguments checks while an engine is installed.
function linearSchema(schema: Record<string, unknown>): Record<string, unknown> {
  const linear = withPatternEngine(schema);
  if (!linear) return schema;
  ensureRegistered(linear);
  return linear.schema;
}

const MAX_REGISTERED = 4_096;
// cfworker looks formats up by name in its exported `format` table; each pattern the installed
// engine compiled is registered there under `pattern:<source>`. Least recently used names are
// dropped past MAX_REGISTERED and registered again before the next validation that needs them.
const registered = new Map<string, (input: string) => boolean>();

interface Rewritten {
  schema: Record<string, unknown>;
  names: Map<string, (input: string) => boolean>;
}

let rewritten = new WeakMap<object, Rewritten>();

const VALUE_KEYWORDS = new Set(["const", "enum", "default", "examples"]);

/**
 * The schema to validate with: with an engine installed, a copy whose `pattern` keywords became
 * formats run by that engine (`ensureRegistered` must be called right before each validation).
 */
function withPatternEngine(schema: Record<string, unknown>): Rewritten | undefined {
  if (!engine) return undefined;
  let entry = rewritten.get(schema);
  if (!entry) {
    const names = new Map<string, (input: string) => boolean>();
    entry = { schema: rewrite(schema, engine, names, 0) as Record<string, unknown>, names };
    rewritten.set(schema, entry);
  }
  return entry;
}

/** Puts the schema's pattern formats in cfworker's table (synchronously before validating). */
function ensureRegistered(entry: Rewritten): void {
  const table = format as unknown as Record<string, ((input: string) => boolean) | undefined>;
  for (const [name, test] of entry.names) {
    registered.delete(name);
    registered.set(name, test);
    table[name] = test;
  }
  while (registered.size > MAX_REGISTERED) {
    const oldest = registered.keys().next().value as string;
    registered.delete(oldest);
    delete table[oldest];
  }
}

function rewrite(
  node: unknown,
  current: PatternEngine,
  names: Map<string, (input: string) => boolean>,
  depth: number,
): unknown {
  if (depth > 64) return node;
  if (Array.isArray(node)) return node.map((item) => rewrite(item, current, names, depth + 1));
  if (typeof node !== "object" || node === null) return node;
  const out: Record<string, unknown> = {};
  let patternName: string | undefined;
  for (const [key, value] of Object.entries(node)) {
    if (key === "pattern" && typeof value === "string") {
      const name = compiled(value, current, names);
      if (name !== undefined) {
        patternName = name;
        continue;
      }
    }
    const copy = VALUE_KEYWORDS.has(key) ? value : rewrite(value, current, names, depth + 1);
    Object.defineProperty(out, key, { value: copy, enumerable: true, writable: true, configurable: true });
  }
  if (patternName !== undefined) {
    if (out.format === undefined) out.format = patternName;
    else out.allOf = [...(Array.isArray(out.allOf) ? out.allOf : []), { format: patternName }];
  }
  return out;
}

function compiled(
  source: string,
  current: PatternEngine,
  names: Map<string, (input: string) => boolean>,
): string | undefined {
  const name = `${PATTERN_FORMAT_PREFIX}${source}`;
  if (names.has(name)) return name;
  try {
    const regex = current.compile(source);
    names.set(name, (input) => regex.test(input));
    return name;
  } catch {
    return undefined;
  }
}
