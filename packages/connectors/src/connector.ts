import type { JsonSchemaObject } from "@patchbay/protocol";
import type { ToolCallContext } from "@patchbay/tools";
import type { z } from "zod";

/**
 * What a service says about a tool (MCP tool annotations). They decide the default approval: a
 * tool asks the user first unless it says `readOnlyHint: true` (and not `destructiveHint: true`).
 *
 * @example
 * ```ts
 * const hints: ConnectorToolAnnotations = { readOnlyHint: true };
 * ```
 */
export interface ConnectorToolAnnotations {
  title?: string;
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/**
 * One tool a connected service offers, under the service's own name. The connector set offers it
 * to the model as `<connector>__<name>` and runs it through the normal tool executor, so
 * validation, approval, timeouts, interruption, progress, images and idempotency apply.
 *
 * @example
 * ```ts
 * const tool: ConnectorTool = {
 *   name: "echo", description: "Echoes the message",
 *   inputSchema: { type: "object", properties: { message: { type: "string" } }, required: ["message"] },
 *   annotations: { readOnlyHint: true },
 *   run: async ({ message }) => String(message),
 * };
 * ```
 */
export interface ConnectorTool {
  /** The service's name for the tool. */
  name: string;
  description: string;
  /** A JSON Schema object for the arguments. */
  inputSchema: JsonSchemaObject;
  annotations?: ConnectorToolAnnotations;
  /** What the user sees while it runs. */
  displayTitle?: string;
  /**
   * Runs the tool: return a string, a `ToolOutput` (text and images) or any JSON value; throw a
   * `ToolError` for a failure the model should read. `signal` aborts on interrupt and timeout;
   * `ctx.update` reports progress.
   */
  run(args: Record<string, unknown>, signal: AbortSignal, ctx: ToolCallContext): unknown;
  /**
   * `true` when `run` only watches `signal` for the abort (`aborted`, `reason`,
   * `throwIfAborted()`, `add`/`removeEventListener("abort")`): it then gets the executor's light
   * stand-in instead of a real `AbortSignal` (see `ToolDefinition.lightSignal`). Leave it out
   * when the signal goes to `fetch` or `AbortSignal.any`.
   */
  lightSignal?: boolean;
}

/**
 * Where a connector reports to. The set hands one to each connector it starts.
 *
 * @example
 * ```ts
 * connect: async (config, context) => {
 *   context.logger.info("connected", { url: config.url });
 *   return { tools: () => [], close: async () => {} };
 * }
 * ```
 */
export interface ConnectorContext {
  /** The instance's name from the config (`everything`). */
  readonly name: string;
  readonly logger: ConnectorLogger;
  /** Call when the service's tool list changed; the set reads `tools()` again. */
  toolsChanged(): void;
  /** Call when the service went down (with why) or came back (`undefined`). */
  setDown(reason: string | undefined): void;
  /**
   * Aborted when the set is closed while `connect` has not settled (a service that hangs at
   * startup): free what `connect` started (a child process, a socket) and reject.
   */
  readonly signal?: AbortSignal;
}

/**
 * The logger a connector writes to (the server's, with the connector's name bound).
 *
 * @example
 * ```ts
 * const logger: ConnectorLogger = { debug: console.debug, info: console.info, warn: console.warn, error: console.error };
 * ```
 */
export interface ConnectorLogger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/**
 * A connected service: its tools now, and how to let it go.
 *
 * @example
 * ```ts
 * const session: ConnectorSession = { tools: () => [echo], close: async () => {} };
 * ```
 */
export interface ConnectorSession {
  /** The tools the service offers now. */
  tools(): ConnectorTool[];
  /** Disconnects and frees what `connect` took (child processes, sockets). Idempotent. */
  close(): Promise<void>;
}

/**
 * A kind of connector (`mcp`, `openapi`, yours): the YAML key that selects it, the zod schema of
 * its config, and `connect`. A config issue's path is relative to the kind's key, so the server
 * can point at the YAML line.
 *
 * @example
 * ```ts
 * const weather = defineConnector({
 *   name: "weather",
 *   configSchema: z.strictObject({ api_key: z.string().min(1) }),
 *   connect: async (config) => ({ tools: () => [forecastTool(config.api_key)], close: async () => {} }),
 * });
 * ```
 */
export interface Connector<TConfig = unknown> {
  /** The key under a `connectors:` entry that selects this kind (`mcp:`). Letters, digits, `_`, `-`. */
  readonly name: string;
  readonly configSchema: z.ZodType<TConfig>;
  /** Connects; throws (any error) when the service cannot be reached: the set marks it down with that message. */
  connect(config: TConfig, context: ConnectorContext): Promise<ConnectorSession>;
}

/**
 * Declares a connector kind with its config type inferred from the schema.
 *
 * @example
 * ```ts
 * export const clock = defineConnector({
 *   name: "clock",
 *   configSchema: z.strictObject({}),
 *   connect: async () => ({ tools: () => [nowTool], close: async () => {} }),
 * });
 * ```
 */
export function defineConnector<TSchema extends z.ZodType>(connector: {
  name: string;
  configSchema: TSchema;
  connect(config: z.output<TSchema>, context: ConnectorContext): Promise<ConnectorSession>;
}): Connector<z.output<TSchema>> {
  return connector as Connector<z.output<TSchema>>;
}
