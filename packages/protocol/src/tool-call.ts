import { z } from "zod";
import { ToolOutputContentSchema } from "./content";
import { IdSchema, JsonObjectSchema, WireErrorSchema } from "./primitives";

/**
 * One tool call as every Patchbay part sees it, whatever provider produced it.
 *
 * `arguments` is the parsed object; `rawArguments` is the text the model produced. When that text
 * is not a JSON object, `arguments` is `{}` and `argumentsError` says why, so the model can be
 * told and try again.
 *
 * @example
 * ```ts
 * const call: NormalizedToolCall = {
 *   id: "call_abc", index: 0, name: "get_weather",
 *   arguments: { city: "Berlin" }, rawArguments: '{"city":"Berlin"}',
 * };
 * ```
 */
export const NormalizedToolCallSchema = z.object({
  id: IdSchema,
  index: z.number().int().nonnegative(),
  name: z.string().min(1),
  arguments: JsonObjectSchema,
  rawArguments: z.string(),
  argumentsError: z.string().optional(),
});

/** One tool call as every Patchbay part sees it. */
export type NormalizedToolCall = z.infer<typeof NormalizedToolCallSchema>;

/**
 * How a tool call ended. `cancelled` carries `held` (the call had disallowed interruptions, so a
 * side effect may have happened).
 *
 * @example
 * ```ts
 * ToolOutcomeSchema.parse("timed_out");
 * ```
 */
export const ToolOutcomeSchema = z.enum([
  "completed",
  "failed",
  "invalid_arguments",
  "unknown_tool",
  "timed_out",
  "cancelled",
  "declined",
  "approval_expired",
]);

/** How a tool call ended. */
export type ToolOutcome = z.infer<typeof ToolOutcomeSchema>;

/**
 * A tool call's result as it travels between peers. `content` is what the model is shown; for
 * every outcome but `completed` its text explains what went wrong and `error` carries the code.
 *
 * @example
 * ```ts
 * ToolResultSchema.parse({ outcome: "completed", content: { text: "Booked.", images: [] } });
 * ```
 */
export const ToolResultSchema = z.object({
  outcome: ToolOutcomeSchema,
  content: ToolOutputContentSchema,
  error: WireErrorSchema.optional(),
  held: z.boolean().optional(),
});

/** A tool call's result as it travels between peers. */
export type ToolResult = z.infer<typeof ToolResultSchema>;
