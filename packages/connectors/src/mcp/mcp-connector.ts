import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  type CallToolResultSchema,
  ErrorCode,
  McpError,
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
import { httpLossOf } from "./http-loss";
import { useLightReadBuffer } from "./light-read-buffer";
import { type McpConfig, McpConfigSchema } from "./mcp-config";
import { type McpCallResult, McpCallResultShape, toToolResultValue } from "./mcp-result";
import { ReconnectLoop } from "./reconnect-loop";
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

/** A `tools/call` request's params, with the progress token that routes its progress. */
interface CallParams {
  name: string;
  arguments: Record<string, unknown>;
  _meta: { progressToken: number };
}

/**
 * One MCP server as a connector session: the SDK client, its tool list (refreshed on
 * `notifications/tools/list_changed`), and the loop that connects again when the connection is
 * lost: a stdio server that exited, a Streamable HTTP server that forgot the session (it
 * restarted) or cannot be reached.
 */
class McpSession implements ConnectorSession {
  #client: Client | undefined;
  /** The client whose connect is under way (its transport holds the child): closed by `close`. */
  #opening: Client | undefined;
  /** Connects again after the connection was lost, with the entry's restart backoff. */
  readonly #reconnect: ReconnectLoop<Client>;
  #tools: ConnectorTool[] = [];
  #closed = false;
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
    const stdio = config.command !== undefined;
    this.#reconnect = new ReconnectLoop<Client>({
      firstWaitMs: config.restart_backoff_ms ?? FIRST_BACKOFF_MS,
      maxWaitMs: config.max_restart_backoff_ms ?? 30_000,
      open: () => this.open(),
      opened: () => this.context.setDown(undefined),
      failed: (error) => {
        const message = error instanceof Error ? error.message : String(error);
        this.context.setDown(
          stdio
            ? `the MCP server could not be restarted: ${message}`
            : (httpLossOf(error)?.reason ?? `could not reconnect to the MCP server: ${message}`),
        );
      },
      waiting: (attempt, inMs) =>
        this.context.logger.warn(stdio ? "restarting mcp server" : "reconnecting to mcp server", {
          attempt,
          inMs,
        }),
    });
  }

  tools(): ConnectorTool[] {
    return this.#tools;
  }

  /** Connects a new client, lists its tools, and makes it the one calls go to. */
  async open(): Promise<Client> {
    const client = new Client({ name: "patchbay", version: "1" }, { capabilities: {} });
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      // A lost connection's list is gone with it.
      if (client !== this.#client && client !== this.#opening) return;
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
    client.onclose = () => {
      const how =
        this.config.command !== undefined
          ? "the MCP server process exited"
          : "the connection to the MCP server closed";
      void this.#lost(client, how, false);
    };
    // An HTTP transport never closes by itself: its errors say when the server is gone. One outside
    // a call (its event stream could not be opened again) is taken here; a call takes its own.
    if (this.config.url !== undefined) {
      client.onerror = (error) => {
        const loss = httpLossOf(error);
        if (loss !== undefined && !loss.neverRan) void this.#lost(client, loss.reason, false);
      };
    }
    this.#opening = client;
    try {
      if (this.#closed) throw new Error("the connector was closed");
      await client.connect(transport);
      settleMalformedResponses(transport);
      await this.#refresh(client);
      // Only now: a connection lost while it opens fails the open (the loop then tries again).
      this.#client = client;
      return client;
    } catch (error) {
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
    this.#progress.set(progressToken, ctx);
    return this.#send(client, { name, arguments: args, _meta: { progressToken } }, signal, plain, false);
  }

  /**
   * Sends a call on `client`. When the connection is found lost (see `httpLossOf`), a new one is
   * opened; the call is sent once more on it only when the server refused it for its session id
   * (it never ran), never when it may have run.
   */
  #send(client: Client, params: CallParams, signal: AbortSignal, plain: boolean, again: boolean) {
    const { name } = params;
    const progressToken = params._meta.progressToken;
    const options = { signal, timeout: NO_SDK_TIMEOUT };
    const sent = plain
      ? client.request({ method: "tools/call", params }, RESULT_SCHEMA, options)
      : client.callTool(params, RESULT_SCHEMA, options);
    return sent.then(
      (result) => {
        this.#progress.delete(progressToken);
        try {
          return toToolResultValue(result as McpCallResult, this.#maxChars);
        } catch (error) {
          // A malformed result: said as every failed call is, with the service and tool.
          if (error instanceof ToolError && error.code === "mcp_call_failed") throw this.#failed(name, error);
          throw error;
        }
      },
      (error: unknown): unknown => {
        const loss = signal.aborted || this.config.url === undefined ? undefined : httpLossOf(error);
        if (loss?.neverRan && !again) {
          return this.#lost(client, loss.reason, true).then((next) => {
            if (next !== undefined && !signal.aborted) return this.#send(next, params, signal, plain, true);
            this.#progress.delete(progressToken);
            throw this.#failed(name, error, `${loss.reason}, and no new session could be opened`);
          });
        }
        this.#progress.delete(progressToken);
        if (signal.aborted) throw error;
        if (loss !== undefined) {
          void this.#lost(client, loss.reason, loss.neverRan);
          throw this.#failed(name, error, loss.reason);
        }
        if (error instanceof McpError && error.code === ErrorCode.ConnectionClosed) {
          throw this.#failed(name, error, "the connection to the MCP server was lost before it answered");
        }
        throw this.#failed(name, error);
      },
    );
  }

  #failed(name: string, error: unknown, why = error instanceof Error ? error.message : String(error)) {
    return new ToolError(`The ${this.context.name} service could not run ${name}: ${why}`, {
      code: "mcp_call_failed",
      cause: error,
    });
  }

  /**
   * The connection of `client` is lost: calls fail meanwhile (the set reports the connector down,
   * with `reason`) and a new one is opened, at once when `now` (the server answered, it only
   * forgot the session), else after the restart backoff. Calls that find the same loss share it.
   * Resolves with the client to send on once the first try settled, or `undefined`.
   */
  #lost(client: Client, reason: string, now: boolean): Promise<Client | undefined> {
    if (this.#closed || client !== this.#client)
      return this.#reconnect.firstTry ?? Promise.resolve(this.#client);
    this.#client = undefined;
    this.context.setDown(reason);
    return this.#reconnect.start(client, now);
  }

  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#client;
    const opening = this.#opening;
    this.#client = undefined;
    this.#opening = undefined;
    // A connect under way (a server hanging at startup) holds a child too: closing it stops it.
    await Promise.all([
      this.#reconnect.close(),
      client?.close(),
      opening !== client ? opening?.close() : undefined,
    ]);
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
 * `max_restart_backoff_ms`, default 30 s). Over HTTP, a server that forgot the session (it
 * restarted) gets a new one at once, and the call it refused is sent once more on it; a server
 * that cannot be reached is reconnected to with the same backoff, its calls failing meanwhile.
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
