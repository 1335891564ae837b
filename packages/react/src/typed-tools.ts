import type { ToolCallItem, ToolDefinition } from "@patchbay/client";

/**
 * A page's tool definitions, as a list whose element types the hooks can read.
 *
 * @example
 * ```ts
 * const defs = [getLocation, searchPlaces] as const satisfies ToolDefinitions;
 * ```
 */
export type ToolDefinitions = readonly ToolDefinition<any>[];

/** The argument type of a tool definition, as its zod schema infers it. */
export type ArgsOf<D> = D extends ToolDefinition<infer A> ? A : Record<string, unknown>;

/**
 * A tool call item whose `name` and `arguments` are typed by the page's definitions: narrowing
 * on `name` gives that tool's arguments.
 *
 * @example
 * ```ts
 * const call = useToolCall<typeof defs>(store, id);
 * if (call?.name === "get_location") call.arguments.reason; // string
 * ```
 */
export type ToolCallOf<TTools extends ToolDefinitions> = TTools[number] extends infer D
  ? D extends { name: infer N }
    ? Omit<ToolCallItem, "name" | "arguments"> & { name: N; arguments: ArgsOf<D> }
    : never
  : never;

/**
 * Keeps a tool definition's name as a literal type and its arguments as its schema infers them,
 * so `ToolCallOf` can tell the tools apart.
 *
 * @example
 * ```ts
 * const getLocation = defineTool({ name: "get_location", description: "...", parameters: z.object({ reason: z.string() }), run: ({ reason }) => reason });
 * ```
 */
export function defineTool<const TName extends string, TArgs>(
  definition: ToolDefinition<TArgs> & { name: TName },
): ToolDefinition<TArgs> & { name: TName } {
  return definition;
}
