import { z } from "zod";

/**
 * An identifier on the wire: a non-empty string of at most 256 characters.
 *
 * @example
 * ```ts
 * IdSchema.parse("call_0");
 * ```
 */
export const IdSchema = z.string().min(1).max(256);

/**
 * A per-session event sequence number. The first event of a session has sequence 1; 0 means
 * "nothing seen yet" when resuming.
 *
 * @example
 * ```ts
 * SeqSchema.parse(42);
 * ```
 */
export const SeqSchema = z.number().int().nonnegative();

/**
 * A JSON object (string keys, any JSON values).
 *
 * @example
 * ```ts
 * JsonObjectSchema.parse({ order_id: "A1" });
 * ```
 */
export const JsonObjectSchema = z.record(z.string(), z.unknown());

/** A JSON object, as carried in tool arguments and metadata. */
export type JsonObject = z.infer<typeof JsonObjectSchema>;

/**
 * An error as it travels on the wire: a stable machine-readable `code` and a human-readable
 * `message`; `path` names the offending field where one is known.
 *
 * @example
 * ```ts
 * WireErrorSchema.parse({ code: "not_found", message: "session s_1 does not exist" });
 * ```
 */
export const WireErrorSchema = z.object({
  code: z.string().min(1),
  message: z.string(),
  path: z.string().optional(),
});

/** An error as it travels on the wire. */
export type WireError = z.infer<typeof WireErrorSchema>;

/**
 * A user as the server knows them: the id the backend minted a token for.
 *
 * @example
 * ```ts
 * UserSchema.parse({ id: "user_42" });
 * ```
 */
export const UserSchema = z.object({ id: IdSchema, name: z.string().optional() });

/** A user as the server knows them. */
export type User = z.infer<typeof UserSchema>;
