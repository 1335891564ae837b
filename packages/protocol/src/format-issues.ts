import type { z } from "zod";

type Issue = z.core.$ZodIssue;

/**
 * Turns a zod error into one line per problem, `path: message`, with the path dotted and array
 * indices included (`tools.0.name: Invalid input`). A problem at the root has no path prefix.
 *
 * When a value fits none of the forms a union allows, the problems of the form it came closest
 * to are reported, with their full path (`images.0.url: must be an https URL`), instead of a
 * bare "Invalid input" at the union. Pass the value that was parsed as `input` so "closest" can
 * look at which fields were actually present.
 *
 * @example
 * ```ts
 * const r = schema.safeParse(value);
 * if (!r.success) console.log(formatZodIssues(r.error, value).join("\n"));
 * ```
 */
export function formatZodIssues(error: z.ZodError, input?: unknown): string[] {
  return flattenZodIssues(error.issues, input).map((issue) => {
    const path = issuePath(issue.path);
    return path ? `${path}: ${issue.message}` : issue.message;
  });
}

/**
 * A zod issue's path, dotted.
 *
 * @example
 * ```ts
 * issuePath(["tools", 0, "name"]); // "tools.0.name"
 * ```
 */
export function issuePath(path: readonly PropertyKey[]): string {
  return path.map((segment) => String(segment)).join(".");
}

/**
 * Replaces each "no form of the union fits" issue by the issues of the form the value came
 * closest to, with paths made absolute, so every issue names the field that was wrong.
 *
 * @example
 * ```ts
 * const issues = flattenZodIssues(result.error.issues, value);
 * issues[0]?.path; // ["images", 0, "url"]
 * ```
 */
export function flattenZodIssues(issues: readonly Issue[], input?: unknown): Issue[] {
  const flat: Issue[] = [];
  for (const issue of issues) {
    if (issue.code === "invalid_union" && issue.errors.length > 0) {
      const branch = closestBranch(issue.errors, issue.path, input);
      const nested = branch.map((inner) => ({ ...inner, path: [...issue.path, ...inner.path] }) as Issue);
      flat.push(...flattenZodIssues(nested, input));
    } else {
      flat.push(issue);
    }
  }
  return flat;
}

// The branch whose complaints are about fields the value has (a wrong value) beats one that
// complains about fields the value lacks (a different form altogether); then fewer complaints win.
function closestBranch(
  branches: readonly (readonly Issue[])[],
  base: readonly PropertyKey[],
  input: unknown,
) {
  let best = branches[0] ?? [];
  let bestScore = Number.POSITIVE_INFINITY;
  for (const branch of branches) {
    let score = 0;
    for (const issue of branch) score += isMissing(issue, [...base, ...issue.path], input) ? 1000 : 1;
    if (score < bestScore) {
      best = branch;
      bestScore = score;
    }
  }
  return best;
}

function isMissing(issue: Issue, path: readonly PropertyKey[], input: unknown): boolean {
  if (input === undefined) return issue.message.endsWith("received undefined");
  let value: unknown = input;
  for (const segment of path) {
    if (typeof value !== "object" || value === null) return true;
    value = (value as Record<PropertyKey, unknown>)[segment as string];
  }
  return value === undefined;
}
