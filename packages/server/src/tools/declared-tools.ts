import type { ToolSpec } from "@patchbay/protocol";
import { type PatternEngine, setPatternEngine } from "@patchbay/tools";
import RE2 from "re2";
import type { ServerLimits } from "../config/limits";
import { ServerError } from "../errors";

/** RE2 runs in time linear in the input; it refuses what it cannot do that way (backreferences, lookaround). */
export const RE2_PATTERNS: PatternEngine = { compile: (source) => new RE2(source, "u") };

/** Makes every argument check of this process run `pattern` keywords in RE2 (idempotent). */
export function useLinearPatterns(): void {
  setPatternEngine(RE2_PATTERNS);
}

// Values, not schemas: their contents are never read as keywords.
const VALUE_KEYWORDS = new Set(["const", "enum", "default", "examples"]);

/**
 * Checks the tools a page declares before the server takes them, so that checking a model's
 * arguments against them later takes bounded time: how many there are, each schema's size and
 * depth, `enum` lengths, every `pattern` compiles in RE2 (which then runs it), no
 * `patternProperties` (its keys would run in the backtracking engine), and every `$ref` local,
 * resolvable and free of loops. A refusal is `invalid_tool_spec` with the path of the culprit,
 * e.g. `tools.0.parameters.properties.code.pattern`.
 */
export function checkDeclaredTools(tools: readonly ToolSpec[], limits: ServerLimits, base = "tools"): void {
  if (tools.length > limits.maxToolsPerSession) {
    refuse(
      base,
      `${tools.length} tools declared; at most ${limits.maxToolsPerSession} (limit maxToolsPerSession)`,
    );
  }
  tools.forEach((tool, index) => {
    const path = `${base}.${index}.parameters`;
    const refs: Ref[] = [];
    walk(tool.parameters, path, [], limits, refs);
    // After the walk, so an oversized enum or pattern is named precisely.
    const bytes = Buffer.byteLength(JSON.stringify(tool.parameters));
    if (bytes > limits.maxSchemaBytes) {
      refuse(path, `the schema has ${bytes} bytes; at most ${limits.maxSchemaBytes} (limit maxSchemaBytes)`);
    }
    checkRefs(tool.parameters as Record<string, unknown>, refs);
  });
}

function refuse(path: string, message: string): never {
  throw new ServerError("invalid_tool_spec", `${path}: ${message}`, { path });
}

interface Ref {
  at: string;
  ref: string;
  /** Where the `$ref` keyword sits, as keys from the schema's root. */
  location: string[];
}

function walk(node: unknown, path: string, location: string[], limits: ServerLimits, refs: Ref[]): void {
  if (location.length > limits.maxSchemaDepth) {
    refuse(path, `the schema is nested more than ${limits.maxSchemaDepth} deep (limit maxSchemaDepth)`);
  }
  if (Array.isArray(node)) {
    for (const [i, item] of node.entries())
      walk(item, `${path}.${i}`, [...location, String(i)], limits, refs);
    return;
  }
  if (typeof node !== "object" || node === null) return;
  for (const [key, value] of Object.entries(node)) {
    const at = `${path}.${key}`;
    if (key === "enum" && Array.isArray(value) && value.length > limits.maxEnumValues) {
      refuse(at, `enum has ${value.length} values; at most ${limits.maxEnumValues} (limit maxEnumValues)`);
    }
    if (VALUE_KEYWORDS.has(key)) continue;
    if (key === "pattern" && typeof value === "string") checkPattern(value, at, limits);
    else if (key === "patternProperties" && typeof value === "object" && value !== null) {
      refuse(
        at,
        "patternProperties is not accepted in a declared schema; use properties or additionalProperties",
      );
    } else if ((key === "$dynamicRef" || key === "$recursiveRef") && typeof value === "string") {
      refuse(at, `${key} is not accepted in a declared schema; use a local $ref`);
    } else if (key === "$ref" && typeof value === "string") refs.push({ at, ref: value, location });
    else walk(value, at, [...location, key], limits, refs);
  }
}

function checkPattern(source: string, at: string, limits: ServerLimits): void {
  if (source.length > limits.maxPatternLength) {
    refuse(
      at,
      `the pattern has ${source.length} characters; at most ${limits.maxPatternLength} (limit maxPatternLength)`,
    );
  }
  try {
    new RE2(source, "u");
  } catch (error) {
    refuse(at, `the pattern is not a regular expression this server runs (RE2: ${(error as Error).message})`);
  }
}

function pointer(ref: string): string[] | undefined {
  if (!ref.startsWith("#")) return undefined;
  const body = ref.slice(1);
  if (body === "") return [];
  if (!body.startsWith("/")) return undefined;
  return body
    .slice(1)
    .split("/")
    .map((segment) => decodeURIComponent(segment).replace(/~1/g, "/").replace(/~0/g, "~"));
}

function resolve(root: Record<string, unknown>, segments: string[]): unknown {
  let node: unknown = root;
  for (const segment of segments) {
    if (typeof node !== "object" || node === null || !Object.hasOwn(node, segment)) return undefined;
    node = (node as Record<string, unknown>)[segment];
  }
  return node;
}

/** Every `$ref` local (`#` or `#/json/pointer`), resolving to a schema, and none reaching itself. */
function checkRefs(root: Record<string, unknown>, refs: Ref[]): void {
  const targets = new Map<string, { segments: string[]; location: string[] }>();
  for (const { at, ref, location } of refs) {
    let segments: string[] | undefined;
    try {
      segments = pointer(ref);
    } catch {
      segments = undefined;
    }
    if (segments === undefined) {
      refuse(
        at,
        `$ref '${ref.slice(0, 200)}' is not local: only '#' and '#/json/pointer' references are accepted`,
      );
    }
    const target = resolve(root, segments);
    if (typeof target !== "object" || target === null)
      refuse(at, `$ref '${ref.slice(0, 200)}' points at nothing`);
    targets.set(at, { segments, location });
  }
  // A $ref whose target contains (or is inside) a path that refers back to it loops: refused
  // outright, recursive schemas included, so no validation can follow it forever.
  const edges = new Map<string, string[]>();
  for (const [at, { segments }] of targets) {
    const inside = [...targets].filter(([, other]) =>
      segments.every((segment, i) => other.location[i] === segment),
    );
    edges.set(
      at,
      inside.map(([key]) => key),
    );
  }
  const state = new Map<string, 1 | 2>();
  const visit = (at: string): void => {
    if (state.get(at) === 2) return;
    if (state.get(at) === 1) refuse(at, "$ref loops back to itself (recursive schemas are not accepted)");
    state.set(at, 1);
    for (const next of edges.get(at) ?? []) visit(next);
    state.set(at, 2);
  };
  for (const at of targets.keys()) visit(at);
}
