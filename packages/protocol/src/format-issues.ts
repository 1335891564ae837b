import type { z } from "zod";

/**
 * Turns a zod error into one line per problem, `path: message`, with the path dotted and array
 * indices included (`tools.0.name: Invalid input`). A problem at the root has no path prefix.
 *
 * @example
 * ```ts
 * const r = schema.safeParse(value);
 * if (!r.success) console.log(formatZodIssues(r.error).join("\n"));
 * ```
 */
export function formatZodIssues(error: z.ZodError): string[] {
  return error.issues.map((issue) => {
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
