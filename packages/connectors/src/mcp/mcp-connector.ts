import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  type CallToolResultSchema,
  type Tool as McpTool,
  type Progress,
  ProgressNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";
import { type ToolCallContext, ToolError } from "@patchbay/tools";
import {
  type ConnectorContext,
  type ConnectorSession,
  type ConnectorTool,
  defineConnector,
} from "../connector";
import { DEFAULT_MAX_RESPONSE_CHARS } from "../cut-text";
import { useLightReadBuffer } from "./light-read-buffer";
import { type McpConfig, McpConfigSchema } from "./mcp-config";
import { type McpCallResult, McpCallResultShape, toToolResultValue } from "./mcp-result";
import { settleMalformedResponses } from "./routable-response";
import { writeStdinPerTick } from "./stdin-per-tick";

/** The SDK's own per-request timeout is turned off in effect: the executor's timeout aborts the call (and so sends `notifications/cancelled`). */
const NO_SDK_TIMEOUT = 2_000_000_000;
const FIRST_BACKOFF_MS = 100;
/**
 * `callTool` is typed for the SDK's own result schemas only; any zod schema works at run time
 * (`Protocol.request` parses the response with it). This one checks only that the result is an
 * object: `toToolResultValue` checks every field it maps.
 */
const RESULT_SCHEMA = McpCallResultShape as unknown as typeof CallToolResultSchema;

/**
 * One MCP server as a connector session: the SDK client, its tool list (refreshed on
 * `notifications/tools/list_changed`), and for stdio the restart loop after the server exits.
 */
class McpSession implements ConnectorSession {
  #client: Client | undefined;
  /** The client whose connect is under way (its transport holds the child): closed by `close`. */
  #opening: Client | undefined;
  #tools: ConnectorTool[] = [];
  #closed = false;
  #restarts = 0;
  #restartTimer: NodeJS.Timeout | undefined;
  /** The contexts of the calls in flight (their `update` relays progress), by the progress token their request carries. */
  readonly #progress = new Map<number, ToolCallContext>();
  #lastToken = 0;
  /** The entry's `max_response_chars`: longer results are cut. */
  readonly #maxChars: number;

  constructor(
    private readonly config: McpConfig,
    private readonly context: ConnectorContext,
  ) {
    this.#maxChars = config.max_response_chars ?? DEFAULT_MAX_RESPONSE_CHARS;
  }

  tools(): ConnectorTool[] {
    return this.#tools;
  }

  async open(): Promise<void> {
    const client = new Client({ name: "patchbay", version: "1" }, { capabilities: {} });
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      // A refresh that fails (the server went away meanwhile) keeps the last list; never an unhandled rejection.
      this.#refresh(client).catch((error: unknown) => {
        this.context.logger.warn("mcp tools/list after list_changed failed", {
          error: error instanceof Error ? error.message : String(error),
        });
      });
    });
    // One router per connection for every call's progress: each request carries its own
    // `_meta.progressToken`, cheaper than the SDK's per-request `onprogress` (a copy of the params
    // and a handler per call). Progress for a call that already ended is dropped.
    client.setNotificationHandler(ProgressNotificationSchema, (notification) => {
      const { progressToken, ...progress } = notification.params;
      if (typeof progressToken === "number")
        this.#progress.get(progressToken)?.update(progressText(progress));
    });
    const transport = this.#transport();
    client.onclose = () => this.#lost(client);
    this.#opening = client;
    try {
      if (this.#closed) throw new Error("the connector was closed");
      await client.connect(transport);
      settleMalformedResponses(transport);
      this.#client = client;
      await this.#refresh(client);
    } catch (error) {
      this.#client = undefined;
      await client.close().catch(() => {});
      throw error;
    } finally {
      if (this.#opening === client) this.#opening = undefined;
    }
  }

  #transport(): StdioClientTransport | StreamableHTTPClientTransport {
    const { config } = this;
    if (config.url !== undefined) {
      return new StreamableHTTPClientTransport(new URL(config.url), {
        requestInit: { headers: { ...config.headers } },
      });
    }
    const transport = new StdioClientTransport({
      command: config.command!,
      args: config.args ?? [],
      env: { ...getDefaultEnvironment(), ...config.env },
      ...(config.cwd !== undefined ? { cwd: config.cwd } : {}),
      stderr: "pipe",
    });
    useLightReadBuffer(transport);
    writeStdinPerTick(transport);
    // The server's stderr goes to the log at debug, line by line, never to ours.
    transport.stderr?.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString("utf8").split("\n")) {
        if (line.trim()) this.context.logger.debug("mcp server stderr", { line: line.slice(0, 500) });
      }
    });
    return transport;
  }

  async #refresh(client: Client): Promise<void> {
    const listed: McpTool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 100; page++) {
      const result = await client.listTools(cursor === undefined ? {} : { cursor });
      listed.push(...result.tools);
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    if (client !== this.#client && this.#client !== undefined) return;
    this.#tools = listed.map((tool) => this.#toConnectorTool(tool));
    this.context.toolsChanged();
  }

  #toConnectorTool(tool: McpTool): ConnectorTool {
    // A tool without an output schema whose calls need no task: `callTool` would only send the
    // request and hand its result on, so the call sends it itself (one async frame and two promise
    // jobs less per call). Any other tool goes through `callTool`, which checks the one and
    // refuses the other.
    const plain = tool.outputSchema === undefined && tool.execution?.taskSupport !== "required";
    const connectorTool: ConnectorTool = {
      name: tool.name,
      description: tool.description ?? tool.title ?? "",
      inputSchema: tool.inputSchema as ConnectorTool["inputSchema"],
      // The context, not `ctx.update`: reading it binds a function, and most calls report no progress.
      run: plain
        ? (args, signal, ctx) => this.#call(tool.name, args, signal, ctx, true)
        : (args, signal, ctx) => this.#call(tool.name, args, signal, ctx, false),
      // The SDK only watches the signal for the abort (then sends `notifications/cancelled`).
      lightSignal: true,
    };
    if (tool.annotations) connectorTool.annotations = { ...tool.annotations };
    const title = tool.title ?? tool.annotations?.title;
    if (title) connectorTool.displayTitle = title;
    return connectorTool;
  }

  // Not an async function: a then on the SDK's promise costs less than a suspended frame per call.
  #call(
    name: string,
    args: Record<string, unknown>,
    signal: AbortSignal,
    ctx: ToolCallContext,
    plain: boolean,
  ) {
    const client = this.#client;
    if (!client)
      throw new ToolError(`The ${this.context.name} service is not connected. Try again later.`, {
        code: "connector_unavailable",
      });
    const progressToken = ++this.#lastToken;
    const progress = this.#progress;
    progress.set(progressToken, ctx);
    const params = { name, arguments: args, _meta: { progressToken } };
    const options = { signal, timeout: NO_SDK_TIMEOUT };
    const sent = plain
      ? client.request({ method: "tools/call", params }, RESULT_SCHEMA, options)
      : client.callTool(params, RESULT_SCHEMA, options);
    return sent.then(
      (result) => {
        progress.delete(progressToken);
        try {
          return toToolResultValue(result as McpCallResult, this.#maxChars);
        } catch (error) {
          // A malformed result: said as every failed call is, with the service and tool.
          if (error instanceof ToolError && error.code === "mcp_call_failed") throw this.#failed(name, error);
          throw error;
        }
      },
      (error: unknown) => {
        progress.delete(progressToken);
        if (signal.aborted) throw error;
        throw this.#failed(name, error);
      },
    );
  }

  #failed(name: string, error: unknown): ToolError {
    const message = error instanceof Error ? error.message : String(error);
    return new ToolError(`The ${this.context.name} service could not run ${name}: ${message}`, {
      code: "mcp_call_failed",
      cause: error,
    });
  }

  /** The connection ended. A stdio server is started again with backoff; calls fail meanwhile. */
  #lost(client: Client): void {
    if (this.#closed || client !== this.#client) return;
    this.#client = undefined;
    const how =
      this.config.command !== undefined
        ? "the MCP server process exited"
        : "the connection to the MCP server closed";
    this.context.setDown(how);
    this.#scheduleRestart();
  }

  #scheduleRestart(): void {
    if (this.#closed) return;
    const max = this.config.max_restart_backoff_ms ?? 30_000;
    const wait = Math.min(
      max,
      (this.config.restart_backoff_ms ?? FIRST_BACKOFF_MS) * 2 ** Math.min(this.#restarts, 20),
    );
    this.#restarts += 1;
    this.context.logger.warn("restarting mcp server", { attempt: this.#restarts, inMs: wait });
    this.#restartTimer = setTimeout(() => {
      this.open().then(
        () => {
          if (this.#closed) return void this.#client?.close();
          this.#restarts = 0;
          this.context.setDown(undefined);
        },
        (error: unknown) => {
          this.context.setDown(
            `the MCP server could not be restarted: ${error instanceof Error ? error.message : String(error)}`,
          );
          this.#scheduleRestart();
        },
      );
    }, wait);
    this.#restartTimer.unref?.();
  }

  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#restartTimer);
    const client = this.#client;
    const opening = this.#opening;
    this.#client = undefined;
    this.#opening = undefined;
    // A connect under way (a server hanging at startup) holds a child too: closing it stops it.
    await Promise.all([client?.close(), opening !== client ? opening?.close() : undefined]);
  }
}

/** A progress notification as the update text: its message, or "3 of 10". */
function progressText(progress: Omit<Progress, "progressToken">): string {
  const of = progress.total !== undefined ? ` of ${progress.total}` : "";
  return progress.message ?? `${progress.progress}${of}`;
}

/**
 * The MCP connector: any MCP server, over stdio or Streamable HTTP, through the official
 * `@modelcontextprotocol/sdk` client. Tools come from `tools/list` (refreshed on
 * `list_changed`); results map to text, images and tool errors; progress notifications become
 * progress updates; an interrupt or timeout sends `notifications/cancelled`; a stdio server that
 * exits is restarted with backoff (`restart_backoff_ms`, default 100 ms, doubling up to
 * `max_restart_backoff_ms`, default 30 s).
 *
 * @example
 * ```ts
 * const set = await ConnectorSet.start(prepareConnectors(
 *   [{ name: "memory", mcp: { command: "npx", args: ["@modelcontextprotocol/server-memory"] } }],
 *   { kinds: [mcpConnector], env: process.env },
 * ));
 * ```
 */
export const mcpConnector = defineConnector({
  name: "mcp",
  configSchema: McpConfigSchema,
  async connect(config, context) {
    const session = new McpSession(config, context);
    // The set gave up on this connect (it closed): stop the server it started.
    const abort = () => void session.close().catch(() => {});
    context.signal?.throwIfAborted();
    context.signal?.addEventListener("abort", abort, { once: true });
    try {
      await session.open();
    } catch (error) {
      await session.close().catch(() => {});
      throw error;
    } finally {
      context.signal?.removeEventListener("abort", abort);
    }
    return session;
  },
});
