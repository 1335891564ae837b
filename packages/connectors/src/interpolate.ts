import type { ConnectorConfigIssue } from "./errors";

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$\$/g;

/**
 * Replaces `${NAME}` in every string of a config (keys are left alone) with the variable's value
 * from `env`; `$$` is a literal `$`. An unset variable is an issue at the string's path. The
 * result is built fresh so the written config (which holds only the names) is never changed:
 * keep that one for logs and errors, hand this one only to `connect`.
 *
 * @example
 * ```ts
 * interpolateEnv({ headers: { authorization: "Bearer ${TOKEN}" } }, { TOKEN: "t" }, ["mcp"]);
 * // { value: { headers: { authorization: "Bearer t" } }, issues: [] }
 * ```
 */
export function interpolateEnv(
  value: unknown,
  env: Record<string, string | undefined>,
  path: (string | number)[] = [],
): { value: unknown; issues: ConnectorConfigIssue[] } {
  const issues: ConnectorConfigIssue[] = [];
  const walk = (node: unknown, at: (string | number)[]): unknown => {
    if (typeof node === "string") {
      return node.replace(VARIABLE, (match, name: string | undefined) => {
        if (name === undefined) return "$";
        const found = env[name];
        if (found === undefined) {
          issues.push({ path: at, message: `\${${name}} is not set in the environment` });
          return match;
        }
        return found;
      });
    }
    if (Array.isArray(node)) return node.map((item, i) => walk(item, [...at, i]));
    if (node !== null && typeof node === "object") {
      const out: Record<string, unknown> = {};
      for (const [key, item] of Object.entries(node)) out[key] = walk(item, [...at, key]);
      return out;
    }
    return node;
  };
  const result = walk(value, path);
  return { value: result, issues };
}

/**
 * Whether a config holds any `${NAME}` reference (its strings may be secrets once filled in).
 *
 * @example
 * ```ts
 * referencesEnv({ url: "${API_URL}" }); // true
 * ```
 */
export function referencesEnv(value: unknown): boolean {
  if (typeof value === "string") return /\$\{[A-Za-z_][A-Za-z0-9_]*\}/.test(value);
  if (Array.isArray(value)) return value.some(referencesEnv);
  if (value !== null && typeof value === "object") return Object.values(value).some(referencesEnv);
  return false;
}
