import { ToolNameSchema } from "@patchbay/protocol";
import { z } from "zod";

/**
 * The reply of the scripted model when no rule matches and the config names no `fallback`.
 *
 * @example
 * ```ts
 * scripted({ rules: [] }); // replies with DEFAULT_SCRIPTED_FALLBACK
 * ```
 */
export const DEFAULT_SCRIPTED_FALLBACK =
  "I am Patchbay's scripted model, a rule-based stand-in rather than a language model, and no rule of mine matches that message. Its developer can give the agent a real model in its config (see docs/models.md).";

/**
 * One tool call a scripted rule makes. String values of `arguments` are templates filled from the
 * rule's named groups: `"{order_id}"` alone gives the group's text (the key is left out when the
 * group did not match), `"{qty:number}"` converts it (`number`, `integer`, `boolean`, `json`),
 * `"Order {order_id}"` interpolates. Other values are passed as written.
 *
 * @example
 * ```ts
 * ScriptedToolCallSchema.parse({ tool: "lookup_order", arguments: { order_id: "{order_id}", verbose: true } });
 * ```
 */
export const ScriptedToolCallSchema = z.strictObject({
  tool: ToolNameSchema,
  arguments: z.record(z.string(), z.unknown()).default({}),
});

function regexError(match: string, flags: string): string | undefined {
  try {
    new RegExp(match, flags);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/**
 * One rule of the scripted model. `match` is a regular expression (with `flags`, default `i`)
 * tried on the latest user message; its named groups fill the `toolCalls` arguments and the
 * replies. After the tool results are in, `reply` is sent (or `errorReply` when a call failed);
 * in replies `{result}` is the text of every tool result, `{results.<tool>}` the text of one
 * tool's result, `{results.<tool>.<path>}` / `{result.<path>}` a field of a JSON result, and
 * `{<group>}` a named group.
 *
 * @example
 * ```ts
 * ScriptedRuleSchema.parse({
 *   match: "where is order (?<order_id>[A-Z0-9]+)",
 *   toolCalls: [{ tool: "lookup_order", arguments: { order_id: "{order_id}" } }],
 *   reply: "Order {order_id}: {results.lookup_order.status}.",
 * });
 * ```
 */
export const ScriptedRuleSchema = z
  .strictObject({
    match: z.string().min(1),
    flags: z
      .string()
      .regex(/^(?!.*(.).*\1)[imsu]*$/, "must be some of the flags i, m, s, u, each once")
      .default("i"),
    toolCalls: z.array(ScriptedToolCallSchema).default([]),
    reply: z.string().optional(),
    errorReply: z.string().optional(),
  })
  .superRefine((rule, context) => {
    const error = regexError(rule.match, rule.flags);
    if (error !== undefined) {
      context.addIssue({
        code: "custom",
        path: ["match"],
        message: `not a valid regular expression: ${error}`,
      });
    }
    if (rule.toolCalls.length === 0 && rule.reply === undefined) {
      context.addIssue({
        code: "custom",
        path: ["reply"],
        message: "a rule without toolCalls needs a reply",
      });
    }
  });

/**
 * The configuration of the scripted model: plain data, so it can live in an agent's YAML config
 * file (the server validates agent files with this schema). `provider: scripted` may be included,
 * so the whole `model:` block of an agent file parses here too.
 *
 * @example
 * ```ts
 * const config = ScriptedModelConfigSchema.parse(yaml.parse(file).model);
 * const model = scripted(config);
 * ```
 */
export const ScriptedModelConfigSchema = z.strictObject({
  provider: z.literal("scripted").optional(),
  /** The model id the scripted model reports. */
  model: z.string().min(1).default("scripted"),
  rules: z.array(ScriptedRuleSchema).default([]),
  fallback: z.string().default(DEFAULT_SCRIPTED_FALLBACK),
  /** Pause between streamed text deltas, to look like a real model in demos. */
  delayMs: z.number().int().min(0).max(10_000).default(0),
  capabilities: z
    .strictObject({ images: z.boolean().optional(), parallelToolCalls: z.boolean().optional() })
    .optional(),
});

/**
 * The scripted model's configuration as written (defaults not yet applied).
 *
 * @example
 * ```ts
 * const config: ScriptedModelConfig = { rules: [{ match: "^hi", reply: "Hello!" }] };
 * ```
 */
export type ScriptedModelConfig = z.input<typeof ScriptedModelConfigSchema>;

/**
 * One rule of the scripted model, as written.
 *
 * @example
 * ```ts
 * const rule: ScriptedRule = { match: "^(hi|hello)\\b", reply: "Hello! I am a scripted stand-in." };
 * ```
 */
export type ScriptedRule = z.input<typeof ScriptedRuleSchema>;
