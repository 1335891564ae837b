import { z } from "zod";
import { type FrameChannel, frameSchema, knownTypes } from "./decode-frame";

/**
 * The JSON Schema dialect every schema of this package is written in.
 *
 * @example
 * ```ts
 * frameJsonSchema("client-to-server").$schema === JSON_SCHEMA_DIALECT; // true
 * ```
 */
export const JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema";

/** A JSON Schema document, as plain JSON. */
export type JsonSchemaDocument = { $schema?: string } & Record<string, unknown>;

/**
 * Converts a protocol zod schema to JSON Schema (draft 2020-12) the way it applies on the wire:
 * the *input* shape, so a field with a default (`tools`, `hosts`, `images`) is optional, and
 * objects stay open (`additionalProperties` unset), because a receiver ignores fields it does
 * not know. Tool `parameters`, `metadata` and `arguments` accept any JSON object.
 *
 * @example
 * ```ts
 * const schema = toWireJsonSchema(ToolSpecSchema);
 * schema.required; // ["name", "description", "parameters"]
 * ```
 */
export function toWireJsonSchema(schema: z.ZodType): JsonSchemaDocument {
  return z.toJSONSchema(schema, {
    target: "draft-2020-12",
    io: "input",
    unrepresentable: "throw",
    reused: "inline",
  }) as JsonSchemaDocument;
}

/**
 * The JSON Schema of the frames of one channel, or of one frame type on it. The channel's schema
 * is a `oneOf` over its frame types, each told apart by its `type` constant.
 *
 * @example
 * ```ts
 * const hello = frameJsonSchema("worker-to-server", "worker.hello");
 * hello.required; // ["type", "protocol", "apiKey", "workerId", "capacity", "handles"]
 * ```
 */
export function frameJsonSchema(channel: FrameChannel, type?: string): JsonSchemaDocument {
  const union = frameSchema(channel);
  if (type === undefined) return toWireJsonSchema(union);
  if (!knownTypes(channel).has(type)) {
    throw new RangeError(`unknown frame type '${type}' on ${channel}`);
  }
  const option = (union.options as readonly z.ZodObject[]).find(
    (candidate) => (candidate.shape.type as z.ZodLiteral).value === type,
  );
  return toWireJsonSchema(option as z.ZodType);
}
