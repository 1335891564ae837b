import { CUT_NOTE } from "./cut-text";
import type { ConnectorConfigIssue } from "./errors";

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$\$/g;

/**
 * Replaces `${NAME}` in every string of a config (keys are left alone) with the variable's value
 * from `env`; `$$` is a literal `$`. An unset variable is an issue at the string's path. The
 * result is built fresh so the written config (which holds only the names) is never changed:
 * keep that one for logs and errors, hand this one only to `connect`. `secrets` are the values
 * filled in (4 characters or more), for {@link redactSecrets}.
 *
 * @example
 * ```ts
 * interpolateEnv({ headers: { authorization: "Bearer ${TOKEN}" } }, { TOKEN: "t" }, ["mcp"]);
 * // { value: { headers: { authorization: "Bearer t" } }, issues: [], secrets: [] }
 * ```
 */
export function interpolateEnv(
  value: unknown,
  env: Record<string, string | undefined>,
  path: (string | number)[] = [],
): { value: unknown; issues: ConnectorConfigIssue[]; secrets: string[] } {
  const issues: ConnectorConfigIssue[] = [];
  const secrets = new Set<string>();
  const walk = (node: unknown, at: (string | number)[]): unknown => {
    if (typeof node === "string") {
      return node.replace(VARIABLE, (match, name: string | undefined) => {
        if (name === undefined) return "$";
        const found = env[name];
        if (found === undefined) {
          issues.push({ path: at, message: `\${${name}} is not set in the environment` });
          return match;
        }
        if (found.length >= 4) secrets.add(found);
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
  return { value: result, issues, secrets: [...secrets] };
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

/**
 * Replaces every filled-in `${VAR}` value in a text (an error message, a log field) with `***`,
 * so what a service echoes back never carries a secret into logs or `/readyz`.
 *
 * @example
 * ```ts
 * redactSecrets("GET https://x.test/?key=abcd1234 failed", ["abcd1234"]); // "GET https://x.test/?key=*** failed"
 * ```
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  const forms: string[] = [];
  for (const secret of secrets) {
    // As written, and as a service echoes it inside JSON or a URL.
    for (const form of [secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret)]) {
      if (!forms.includes(form)) forms.push(form);
    }
  }
  for (const form of forms) out = out.split(form).join("***");
  // A response cut in the middle of a secret ends with its first characters.
  const cut = CUT_NOTE.exec(out);
  if (cut) out = withoutSecretStart(out.slice(0, cut.index), forms) + out.slice(cut.index);
  return out;
}

/** `text` with a secret's first characters (4 or more) at its very end replaced by `***`. */
function withoutSecretStart(text: string, forms: readonly string[]): string {
  for (const form of forms) {
    for (let n = Math.min(form.length - 1, text.length); n >= 4; n--) {
      if (text.endsWith(form.slice(0, n))) return `${text.slice(0, -n)}***`;
    }
  }
  return text;
}
