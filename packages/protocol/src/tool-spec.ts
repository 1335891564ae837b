import { z } from "zod";

/**
 * A tool name: letters, digits, `_` and `-`, 1 to 64 characters (what every provider accepts).
 *
 * @example
 * ```ts
 * ToolNameSchema.parse("lookup_order");
 * ```
 */
export const ToolNameSchema = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}$/, "must be 1 to 64 letters, digits, '_' or '-'");

/**
 * How a tool asks the user before it runs. `{argument}` placeholders in `title` are filled from
 * the call's arguments; `reasonArgument` names the argument whose value is shown as the reason.
 *
 * @example
 * ```ts
 * ToolApprovalSpecSchema.parse({ title: "Book flight {flight_id}?", allowTitle: "Book" });
 * ```
 */
export const ToolApprovalSpecSchema = z.object({
  title: z.string().min(1),
  reasonArgument: z.string().min(1).optional(),
  allowTitle: z.string().min(1).optional(),
  declineTitle: z.string().min(1).optional(),
  /** How long the user has to answer before the call fails as `approval_expired`. */
  expiresInMs: z.number().int().positive().optional(),
  /**
   * The tool decides per call whether to ask (its `when` function, which stays where the tool is
   * defined). The server then does not ask before it routes the call: the page or worker running
   * it evaluates `when` and, when it says yes, asks the server to ask the user (`tool.approval` /
   * `hosted.approval`) before the tool runs. A server that does not know the field asks every time.
   */
  conditional: z.boolean().optional(),
});

/** How a tool asks the user before it runs. */
export type ToolApprovalSpec = z.infer<typeof ToolApprovalSpecSchema>;

/**
 * A JSON Schema describing a tool's arguments. It must be an object schema.
 *
 * @example
 * ```ts
 * JsonSchemaObjectSchema.parse({ type: "object", properties: { city: { type: "string" } } });
 * ```
 */
export const JsonSchemaObjectSchema = z.looseObject({ type: z.literal("object") });

/** A JSON Schema describing a tool's arguments. */
export type JsonSchemaObject = z.infer<typeof JsonSchemaObjectSchema> & Record<string, unknown>;

/**
 * Everything a peer needs to know about a tool to offer it to a model and to run it: the spec
 * that page tools and hosted tools send to the server.
 *
 * @example
 * ```ts
 * const spec: ToolSpec = {
 *   name: "get_location",
 *   description: "Where the person is.",
 *   parameters: { type: "object", properties: { reason: { type: "string" } }, required: ["reason"] },
 *   approval: { title: "Share your location?", reasonArgument: "reason" },
 * };
 * ```
 */
export const ToolSpecSchema = z.object({
  name: ToolNameSchema,
  description: z.string().min(1),
  parameters: JsonSchemaObjectSchema,
  approval: ToolApprovalSpecSchema.optional(),
  displayTitle: z.string().min(1).optional(),
  interruptible: z.boolean().optional(),
  timeoutMs: z.number().int().positive().optional(),
  idleTimeoutMs: z.number().int().positive().optional(),
});

/** Everything a peer needs to know about a tool to offer it to a model and to run it. */
export type ToolSpec = z.infer<typeof ToolSpecSchema>;
