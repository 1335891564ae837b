import { z } from "zod";

const TOOL_NAME = /^[A-Za-z0-9_.\-/]{1,128}$/;
const CONNECTOR_NAME = /^[A-Za-z0-9-]{1,30}$/;
/** The keys every entry may have; any other key is the kind (`mcp`, `openapi`, ...), unless it is a misspelling of one of these. */
const COMMON_KEYS = new Set(["name", "tools", "approval", "timeout_ms", "max_concurrent_calls"]);

const toolList = z.array(
  z.string().regex(TOOL_NAME, { error: "must be a tool name (letters, digits, '_', '-', '.', '/')" }),
);

/** Edit distance (insertions, deletions, substitutions) between two short keys. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j]! + 1,
        current[j - 1]! + 1,
        previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * Whether `key` reads as a misspelling of the common key `known`: one edit away (two for keys of
 * 6 characters or more), or, from 6 characters, one a prefix of the other (`timeout` for
 * `timeout_ms`). Kept tight so a kind's name (`time`) is not taken for a common key (`name`).
 */
function isCloseTo(key: string, known: string): boolean {
  const lower = key.toLowerCase();
  if (lower.length >= 6 && (known.startsWith(lower) || lower.startsWith(known))) return true;
  return distance(lower, known) <= (Math.min(lower.length, known.length) >= 6 ? 2 : 1);
}

/**
 * One entry of an agent's `connectors:` list, as written (the kind's own config is checked when
 * the connectors are prepared, by the kind's schema).
 *
 * @example
 * ```ts
 * ConnectorEntrySchema.parse({ name: "everything", mcp: { command: "npx", args: ["@modelcontextprotocol/server-everything"] } });
 * ```
 */
export const ConnectorEntrySchema = z
  .looseObject({
    /** Offered tool names start with it: `<name>__<tool>`. Letters, digits and `-` (no `_`, so the split is unambiguous). */
    name: z
      .string({ error: "is required" })
      .regex(CONNECTOR_NAME, { error: "must be 1 to 30 letters, digits or '-'" }),
    /** Which of the service's tools are offered: only `allow` (when given), never `deny`. */
    tools: z.strictObject({ allow: toolList.optional(), deny: toolList.optional() }).optional(),
    /**
     * Who asks the user first. Without it, the tool's annotations decide (asks unless
     * `readOnlyHint: true`). With `tools`, exactly those ask (`[]`: none, `["*"]`: all); `title`
     * may use `{argument}` placeholders.
     */
    approval: z
      .strictObject({
        tools: z
          .array(z.string().regex(/^(\*|[A-Za-z0-9_.\-/]{1,128})$/, { error: "must be a tool name or '*'" }))
          .optional(),
        title: z.string().min(1).max(200).optional(),
      })
      .optional(),
    /** Each call fails as timed out (and the service is told to cancel) after this long. */
    timeout_ms: z.number().int().positive().max(3_600_000).optional(),
    /** At most this many calls of each of its tools run at once across all sessions (a rate-limited service). */
    max_concurrent_calls: z.number().int().positive().max(1_000).optional(),
  })
  .superRefine((entry, ctx) => {
    const kinds: string[] = [];
    for (const key of Object.keys(entry)) {
      if (COMMON_KEYS.has(key)) continue;
      // A misspelled common key (`aproval:`) is said as such, not taken for a second kind.
      const meant = [...COMMON_KEYS].find((known) => isCloseTo(key, known));
      if (meant === undefined) kinds.push(key);
      else
        ctx.addIssue({
          code: "custom",
          message: `unknown key '${key}' (did you mean '${meant}'?)`,
          path: [key],
        });
    }
    if (kinds.length === 0) {
      ctx.addIssue({
        code: "custom",
        message: "names no connector kind: add one key such as 'mcp:' or 'openapi:'",
        path: [],
      });
    } else if (kinds.length > 1) {
      ctx.addIssue({
        code: "custom",
        message: `has more than one connector kind (${kinds.join(", ")}): keep one`,
        path: [kinds[1]!],
      });
    }
  });

/**
 * A `connectors:` entry as written.
 *
 * @example
 * ```ts
 * const entry: ConnectorEntry = { name: "everything", mcp: { command: "npx" }, timeout_ms: 30000 };
 * ```
 */
export type ConnectorEntry = z.output<typeof ConnectorEntrySchema>;

/**
 * The list under `connectors:`; names must be unique.
 *
 * @example
 * ```ts
 * ConnectorEntriesSchema.parse([{ name: "memory", mcp: { command: "npx", args: ["@modelcontextprotocol/server-memory"] } }]);
 * ```
 */
export const ConnectorEntriesSchema = z.array(ConnectorEntrySchema).superRefine((entries, ctx) => {
  const seen = new Set<string>();
  entries.forEach((entry, i) => {
    if (seen.has(entry.name)) {
      ctx.addIssue({
        code: "custom",
        message: `another connector is already named '${entry.name}'`,
        path: [i, "name"],
      });
    }
    seen.add(entry.name);
  });
});

/**
 * The kind key of an entry (`mcp` for `{ name, mcp: {...} }`).
 *
 * @example
 * ```ts
 * connectorKindOf({ name: "fs", mcp: { command: "npx" } }); // "mcp"
 * ```
 */
export function connectorKindOf(entry: ConnectorEntry): string {
  return Object.keys(entry).find((key) => !COMMON_KEYS.has(key)) ?? "";
}
