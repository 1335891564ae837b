import {
  alternatives,
  boundMessage,
  dottedPath,
  EXTRA_FORBIDDEN,
  FIELD_REQUIRED,
  formatMessage,
  issueLine,
  patternMessage,
  typeMessage,
  unionMessage,
  VALUE_INVALID,
} from "./issue-wording";
import type { ValidationResult } from "./validate-arguments";

/** What a zod `safeParseAsync` resolves with, as far as this package reads it. */
export type SafeParseResult =
  | { success: true; data: unknown }
  | { success: false; error: { issues: ZodIssueLike[] } };

/** A zod parse result as a {@link ValidationResult} with worded issues. */
export function fromIssues(result: SafeParseResult): ValidationResult<unknown> {
  return result.success
    ? { ok: true, value: result.data }
    : { ok: false, issues: zodIssueLines(result.error.issues) };
}

/** A zod issue of either major version, as far as the wording needs it. */
export interface ZodIssueLike {
  code: string;
  path: PropertyKey[];
  message?: string;
  input?: unknown;
  [key: string]: unknown;
}

/** The kind of value a size bound is about, from zod's `origin` (4) or `type` (3). */
export function boundKind(origin: unknown): "number" | "string" | "array" | "object" | undefined {
  if (origin === "number" || origin === "bigint" || origin === "int") return "number";
  if (origin === "string") return "string";
  if (origin === "array" || origin === "set") return "array";
  if (origin === "object") return "object";
  return undefined;
}

/** Each failed branch of a union as its messages, paths relative to the union. */
export function branchMessages(
  branches: readonly (readonly ZodIssueLike[])[],
  unionPath: readonly PropertyKey[],
) {
  const here = dottedPath(unionPath);
  return branches.map((issues) =>
    issues.map((issue) => {
      // zod 4 gives branch issues paths relative to the union, zod 3 absolute ones.
      const path = dottedPath(issue.path);
      return path === "" || path === here ? (issue.message ?? "") : `${path}: ${issue.message ?? ""}`;
    }),
  );
}

function stringCheckMessage(format: string, issue: ZodIssueLike): string {
  switch (format) {
    case "regex":
      return patternMessage(issue.pattern);
    case "starts_with":
      return `String should start with '${String(issue.prefix)}'`;
    case "ends_with":
      return `String should end with '${String(issue.suffix)}'`;
    case "includes":
      return `String should contain '${String(issue.includes)}'`;
    case "lowercase":
      return "String should be lowercase";
    case "uppercase":
      return "String should be uppercase";
    default:
      return formatMessage(format);
  }
}

/**
 * The Pydantic-style message for a raw zod 4 issue, as handed to a per-parse error map (so that
 * `input` is there). Returns `undefined` to keep zod's own message for codes it has no wording
 * for. A message the schema's author wrote (`.max(9, "at most 9 seats")`) never reaches the map:
 * zod prefers it, and so do we.
 */
export function zod4IssueMessage(issue: ZodIssueLike): string | undefined {
  switch (issue.code) {
    case "invalid_type":
      if (issue.input === undefined) return FIELD_REQUIRED;
      return typeMessage(String(issue.expected), issue.input);
    case "too_big":
    case "too_small": {
      const kind = boundKind(issue.origin);
      if (!kind) return undefined;
      const side = issue.code === "too_big" ? "max" : "min";
      const limit = (side === "max" ? issue.maximum : issue.minimum) as number | bigint;
      return boundMessage(kind, side, limit, {
        inclusive: issue.inclusive !== false,
        exact: issue.exact === true,
      });
    }
    case "invalid_format":
      return stringCheckMessage(String(issue.format), issue);
    case "not_multiple_of":
      return `Input should be a multiple of ${String(issue.divisor)}`;
    case "unrecognized_keys":
      return EXTRA_FORBIDDEN;
    case "invalid_value":
      return `Input should be ${alternatives(issue.values as unknown[])}`;
    case "invalid_union":
      if (Array.isArray(issue.options) && issue.discriminator !== undefined) {
        return `Input should be ${alternatives(issue.options)}`;
      }
      return unionMessage(branchMessages((issue.errors as ZodIssueLike[][]) ?? [], []));
    case "custom":
      return VALUE_INVALID;
    default:
      return undefined;
  }
}

/**
 * One line per problem, `path: message`, from the issues of a zod error of either version. An
 * unknown-keys issue becomes one line per key, each under the key's own path.
 */
export function zodIssueLines(issues: readonly ZodIssueLike[]): string[] {
  const lines: string[] = [];
  for (const issue of issues) {
    const message = issue.message ?? "Invalid input";
    if (issue.code === "unrecognized_keys" && message === EXTRA_FORBIDDEN && Array.isArray(issue.keys)) {
      for (const key of issue.keys as string[])
        lines.push(issueLine(dottedPath([...issue.path, key]), message));
      continue;
    }
    lines.push(issueLine(dottedPath(issue.path), message));
  }
  return lines;
}
