import { type ToolDefinition, ToolError, Tools } from "@patchbay/tools";
import type { ConnectorContext, ConnectorLogger, ConnectorSession } from "./connector";
import { connectorKindOf } from "./connector-entry";
import { redactSecrets } from "./interpolate";
import { isToolOffered, offeredToolName, toOfferedDefinition, unknownApprovalTools } from "./offered-tool";
import type { PreparedConnector } from "./prepare-connectors";

/**
 * How one connector is doing, for `/readyz`, logs and tests. `tools` are the offered names.
 *
 * @example
 * ```ts
 * const status: ConnectorStatus = { name: "everything", kind: "mcp", state: "down", reason: "spawn npx ENOENT", tools: [] };
 * ```
 */
export interface ConnectorStatus {
  name: string;
  kind: string;
  state: "starting" | "up" | "down";
  reason?: string;
  tools: string[];
}

/**
 * Options of {@link ConnectorSet.start}.
 *
 * @example
 * ```ts
 * const options: ConnectorSetOptions = { logger, startTimeoutMs: 20_000 };
 * ```
 */
export interface ConnectorSetOptions {
  logger?: ConnectorLogger;
  /** How long `start` waits for a connector before reporting it down (it may still come up later). Default 20 s. */
  startTimeoutMs?: number;
  /** Names taken elsewhere: a connector tool with such a name is skipped with a warning. */
  reserved?: (name: string) => boolean;
  /**
   * The registry to offer the tools in (an agent's own `Tools`, so its tools and the connector
   * tools are hosted together). Default: a new one. A name already registered there is skipped.
   */
  tools?: Tools;
}

/** How long `close` waits for an aborted connect to stop what it started. */
const CLOSE_WAIT_MS = 10_000;

const quiet: ConnectorLogger = { debug() {}, info() {}, warn() {}, error() {} };

class Instance {
  state: ConnectorStatus["state"] = "starting";
  reason: string | undefined;
  session: ConnectorSession | undefined;
  offered = new Map<string, ToolDefinition>();
  closed = false;
  /** Aborted on close: a connect still under way frees what it started (the child of a hung MCP server). */
  readonly abort = new AbortController();
  /** The connect, settled once the session is kept, closed or refused. */
  connecting: Promise<void> | undefined;
  constructor(readonly prepared: PreparedConnector) {}
  get name(): string {
    return this.prepared.entry.name;
  }
}

/**
 * The running connectors of one agent and the `Tools` registry their tools are offered in, kept
 * current as services go down, come back and change their tool lists. A connector that cannot
 * connect is reported down (with why) and its allowed tools answer with that reason; it never
 * makes `start` throw.
 *
 * @example
 * ```ts
 * const set = await ConnectorSet.start(prepareConnectors(entries, { kinds: builtinConnectors, env: process.env }));
 * set.tools.names(); // ["everything__echo", "everything__get-sum"]
 * await set.close();
 * ```
 */
export class ConnectorSet {
  /** Every offered connector tool, under its `<connector>__<tool>` name (and whatever else `options.tools` held). */
  readonly tools: Tools;
  readonly #instances: Instance[];
  readonly #logger: ConnectorLogger;
  readonly #reserved: (name: string) => boolean;

  private constructor(prepared: readonly PreparedConnector[], options: ConnectorSetOptions) {
    this.#instances = prepared.map((p) => new Instance(p));
    this.#logger = options.logger ?? quiet;
    this.tools = options.tools ?? new Tools();
    const reserved = options.reserved ?? (() => false);
    // Taken: reserved elsewhere, or in the registry and not one of ours.
    this.#reserved = (name) =>
      reserved(name) ||
      (this.tools.has(name) && !this.#instances.some((instance) => instance.offered.has(name)));
  }

  /** Connects every connector at once and resolves when each is up, down, or past the start timeout. */
  static async start(
    prepared: readonly PreparedConnector[],
    options: ConnectorSetOptions = {},
  ): Promise<ConnectorSet> {
    const set = new ConnectorSet(prepared, options);
    const limit = options.startTimeoutMs ?? 20_000;
    await Promise.all(set.#instances.map((instance) => set.#connect(instance, limit)));
    return set;
  }

  /** Each connector's state, in config order. */
  status(): ConnectorStatus[] {
    return this.#instances.map((instance) => {
      const status: ConnectorStatus = {
        name: instance.name,
        kind: connectorKindOf(instance.prepared.entry),
        state: instance.state,
        tools: [...instance.offered.keys()],
      };
      if (instance.reason !== undefined) status.reason = instance.reason;
      return status;
    });
  }

  /** Disconnects every connector (children stopped, sockets closed). Idempotent. */
  async close(): Promise<void> {
    await Promise.all(
      this.#instances.map(async (instance) => {
        if (instance.closed) return;
        instance.closed = true;
        for (const name of instance.offered.keys()) this.tools.unregister(name);
        instance.offered.clear();
        if (!instance.session && instance.connecting) {
          // Still connecting (past the start timeout, say): abort it so it stops what it started,
          // and wait for that, within a bound (a connector may ignore the signal).
          instance.abort.abort(new Error("the connector set closed"));
          let timer: NodeJS.Timeout | undefined;
          await Promise.race([
            instance.connecting,
            new Promise<void>((resolve) => {
              timer = setTimeout(resolve, CLOSE_WAIT_MS);
              timer.unref?.();
            }),
          ]);
          clearTimeout(timer);
        }
        await instance.session?.close().catch((error) => {
          this.#logger.warn("connector did not close cleanly", {
            connector: instance.name,
            error: String(error),
          });
        });
      }),
    );
  }

  async #connect(instance: Instance, limit: number): Promise<void> {
    const { entry, kind, config } = instance.prepared;
    const context: ConnectorContext = {
      name: entry.name,
      logger: childLogger(this.#logger, entry.name, instance.prepared.secrets),
      toolsChanged: () => this.#sync(instance),
      setDown: (reason) => this.#setDown(instance, reason),
      signal: instance.abort.signal,
    };
    let timer: NodeJS.Timeout | undefined;
    const connecting = kind.connect(config, context).then(
      (session) => {
        if (instance.closed) return session.close().catch(() => {});
        instance.session = session;
        instance.state = "up";
        instance.reason = undefined;
        this.#sync(instance);
        this.#logger.info("connector up", {
          connector: entry.name,
          kind: kind.name,
          tools: [...instance.offered.keys()],
        });
      },
      (error: unknown) => {
        this.#setDown(instance, `could not connect: ${messageOf(error)}`);
      },
    );
    instance.connecting = connecting;
    const timedOut = new Promise<void>((resolve) => {
      timer = setTimeout(() => {
        if (instance.state === "starting") this.#setDown(instance, `did not connect within ${limit} ms`);
        resolve();
      }, limit);
      timer.unref?.();
    });
    await Promise.race([connecting, timedOut]);
    clearTimeout(timer);
  }

  #setDown(instance: Instance, reason: string | undefined): void {
    if (instance.closed) return;
    if (reason === undefined) {
      if (instance.state !== "up") this.#logger.info("connector back up", { connector: instance.name });
      instance.state = "up";
      instance.reason = undefined;
      this.#sync(instance);
      return;
    }
    reason = redactSecrets(reason, instance.prepared.secrets);
    const wasDown = instance.state === "down" && instance.reason === reason;
    instance.state = "down";
    instance.reason = reason;
    if (!wasDown) this.#logger.error("connector down", { connector: instance.name, reason });
    // Never connected: offer the allowed tools anyway, so a call says why it cannot run.
    if (!instance.session) this.#offerPlaceholders(instance);
  }

  /** Registers what the session offers now, replacing what the instance offered before. */
  #sync(instance: Instance): void {
    if (instance.closed || !instance.session) return;
    const { entry } = instance.prepared;
    const next = new Map<string, ToolDefinition>();
    const serviceTools = instance.session.tools().map((tool) => tool.name);
    for (const tool of instance.session.tools()) {
      if (!isToolOffered(entry, tool.name)) continue;
      const name = offeredToolName(entry.name, tool.name);
      if (name === undefined || next.has(name) || (this.#reserved(name) && !instance.offered.has(name))) {
        this.#logger.warn("connector tool skipped: its offered name is too long or taken", {
          connector: entry.name,
          tool: tool.name,
        });
        continue;
      }
      next.set(
        name,
        toOfferedDefinition(entry, tool, name, {
          downReason: () => (instance.state === "down" ? instance.reason : undefined),
          secrets: instance.prepared.secrets,
          serviceTools,
        }),
      );
    }
    for (const allowed of entry.tools?.allow ?? []) {
      if (!serviceTools.includes(allowed)) {
        this.#logger.warn("connector allow list names a tool the service does not offer", {
          connector: entry.name,
          tool: allowed,
        });
      }
    }
    const unknown = unknownApprovalTools(entry, serviceTools);
    if (unknown.length > 0) {
      // Fail closed (see needsApproval): the tools that ask by default keep asking.
      this.#logger.warn(
        "connector approval list names a tool the service does not offer: the tools that ask by default still ask",
        { connector: entry.name, tools: unknown, known: serviceTools },
      );
    }
    this.#replace(instance, next);
  }

  #offerPlaceholders(instance: Instance): void {
    const { entry } = instance.prepared;
    const next = new Map<string, ToolDefinition>();
    for (const tool of entry.tools?.allow ?? []) {
      const name = offeredToolName(entry.name, tool);
      if (name === undefined || (this.#reserved(name) && !instance.offered.has(name))) continue;
      next.set(name, {
        name,
        description: `${tool} from ${entry.name} (unavailable: the service is down)`,
        parameters: { type: "object" },
        run: () => {
          throw new ToolError(
            `The ${entry.name} service is unavailable right now (${instance.reason}). Try again later.`,
            {
              code: "connector_unavailable",
            },
          );
        },
      });
    }
    this.#replace(instance, next);
  }

  #replace(instance: Instance, next: Map<string, ToolDefinition>): void {
    for (const [name, definition] of instance.offered) {
      if (next.get(name) !== definition) this.tools.unregister(name);
    }
    for (const [name, definition] of next) {
      if (instance.offered.get(name) === definition) continue;
      try {
        this.tools.register(definition);
      } catch (error) {
        next.delete(name);
        this.#logger.warn("connector tool skipped", {
          connector: instance.name,
          tool: name,
          error: messageOf(error),
        });
      }
    }
    instance.offered = next;
  }
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The connector's logger: its name bound, and the filled-in `${VAR}` values redacted from every string field. */
function childLogger(
  logger: ConnectorLogger,
  connector: string,
  secrets: readonly string[],
): ConnectorLogger {
  const bind = (fields?: Record<string, unknown>) => {
    const out: Record<string, unknown> = { connector };
    for (const [key, value] of Object.entries(fields ?? {})) {
      out[key] = typeof value === "string" ? redactSecrets(value, secrets) : value;
    }
    return out;
  };
  return {
    debug: (message, fields) => logger.debug(message, bind(fields)),
    info: (message, fields) => logger.info(message, bind(fields)),
    warn: (message, fields) => logger.warn(message, bind(fields)),
    error: (message, fields) => logger.error(message, bind(fields)),
  };
}
