/**
 * The most characters of error text a dispatch result, tool message or `ToolDispatchError`
 * carries. Longer text is cut and says how much was left out.
 *
 * @example
 * ```ts
 * entry.error!.length <= MAX_ERROR_TEXT + 40; // the note of what was cut adds a little
 * ```
 */
export const MAX_ERROR_TEXT = 2_000;

/** Keys whose string values are taken as secrets wherever they sit in the dispatch context. */
const SECRET_KEY =
  /pass(?:word|phrase)?|secret|token|api[-_]?key|authori[sz]ation|cookie|credential|private[-_]?key/i;
/** Shorter values are left alone: redacting "ab" everywhere would garble the text. */
const MIN_SECRET_LENGTH = 4;
const MAX_DEPTH = 8;
const MAX_SECRETS = 1_000;
const REDACTED = "[REDACTED]";

/**
 * The string values under secret-looking keys (`password`, `token`, `apiKey`, `authorization`,
 * `cookie`, `secret`, `credential`, `private_key`, ...) of a dispatch context, at any depth.
 *
 * @example
 * ```ts
 * secretValues({ user: { id: "u_1", apiToken: "tok_9f8e" } }); // ["tok_9f8e"]
 * ```
 */
export function secretValues(context: unknown): string[] {
  const found: string[] = [];
  const visit = (value: unknown, secret: boolean, depth: number) => {
    if (found.length >= MAX_SECRETS || depth > MAX_DEPTH) return;
    if (typeof value === "string") {
      if (secret && value.length >= MIN_SECRET_LENGTH) found.push(value);
      return;
    }
    if (typeof value !== "object" || value === null) return;
    if (Array.isArray(value)) {
      for (const item of value) visit(item, secret, depth + 1);
      return;
    }
    for (const key of Object.keys(value)) {
      visit((value as Record<string, unknown>)[key], secret || SECRET_KEY.test(key), depth + 1);
    }
  };
  visit(context, false, 0);
  return found;
}

/**
 * Error text as a dispatch hands it on: the given secrets and credentials in common shapes
 * (`Bearer <token>`, `Basic <token>`, the password in `scheme://user:password@host`) replaced by
 * `[REDACTED]`, then cut to {@link MAX_ERROR_TEXT} characters. Redacting comes first, so a cut
 * never leaves half a secret behind.
 *
 * @example
 * ```ts
 * redactErrorText("connect postgres://app:hunter2@db failed", []); // "connect postgres://app:[REDACTED]@db failed"
 * ```
 */
export function redactErrorText(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of [...secrets].sort((a, b) => b.length - a.length)) {
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  out = out
    .replace(/\b(Bearer|Basic)\s+[A-Za-z0-9._~+/=-]{4,}/gi, `$1 ${REDACTED}`)
    .replace(/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]*:)[^\s@/]+@/gi, `$1${REDACTED}@`);
  if (out.length <= MAX_ERROR_TEXT) return out;
  // Never split a surrogate pair.
  let end = MAX_ERROR_TEXT;
  const last = out.charCodeAt(end - 1);
  if (last >= 0xd800 && last <= 0xdbff) end--;
  return `${out.slice(0, end)}… (${out.length - end} more characters cut)`;
}
