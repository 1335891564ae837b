/** How many characters of a service's response the model is shown by default (`max_response_chars`). */
export const DEFAULT_MAX_RESPONSE_CHARS = 100_000;

/**
 * A service's response text cut to `maxChars`, with a note saying how long it was (the model is
 * told it did not see everything). Shorter text is returned as is.
 *
 * @example
 * ```ts
 * cutText("x".repeat(150_000), 100_000); // "xxx…x\n[cut: the response had 150000 characters]"
 * ```
 */
export function cutText(text: string, maxChars: number = DEFAULT_MAX_RESPONSE_CHARS): string {
  if (text.length <= maxChars) return text;
  return `${text.slice(0, maxChars)}\n[cut: the response had ${text.length} characters]`;
}

/** The note {@link cutText} ends a cut text with. */
export const CUT_NOTE: RegExp = /\n\[cut: the response had \d+ characters\]$/;
