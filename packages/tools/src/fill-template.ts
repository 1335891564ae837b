const PLACEHOLDER = /\{\{|\}\}|\{([^{}]*)\}/g;

function lookup(args: Record<string, unknown>, path: string): unknown {
  let current: unknown = args;
  for (const segment of path.split(".")) {
    if (current === null || typeof current !== "object" || !Object.hasOwn(current, segment)) return undefined;
    current = (current as Record<string, unknown>)[segment];
  }
  return current;
}

function show(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "boolean" || typeof value === "bigint")
    return String(value);
  return JSON.stringify(value) ?? "";
}

/**
 * Fills `{argument}` placeholders in an approval title from the call's arguments. A dotted name
 * reaches into nested objects (`{passenger.name}`); `{{` and `}}` are literal braces. A
 * placeholder whose argument is absent is left as written, so a missing value shows rather than
 * silently disappearing.
 *
 * @example
 * ```ts
 * fillTemplate("Book flight {flight_id} for {seats} seats?", { flight_id: "LH400", seats: 2 });
 * // "Book flight LH400 for 2 seats?"
 * ```
 */
export function fillTemplate(title: string, args: Record<string, unknown>): string {
  return title.replace(PLACEHOLDER, (match, name: string | undefined) => {
    if (match === "{{") return "{";
    if (match === "}}") return "}";
    const value = lookup(args, (name ?? "").trim());
    return value === undefined ? match : show(value);
  });
}

/**
 * The argument names used as `{placeholders}` in a title (top-level names, for checking them
 * against a schema at registration).
 */
export function templatePlaceholders(title: string): string[] {
  const names: string[] = [];
  for (const match of title.matchAll(PLACEHOLDER)) {
    if (match[1] !== undefined) names.push(match[1].trim().split(".")[0] ?? "");
  }
  return names;
}
