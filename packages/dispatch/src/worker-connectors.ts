import {
  builtinConnectors,
  type Connector,
  ConnectorConfigError,
  ConnectorEntriesSchema,
  type ConnectorLogger,
  ConnectorSet,
  type PreparedConnector,
  prepareConnectors,
  readConnectorsFile,
} from "@patchbay/connectors";
import type { HostableAgent, HostOptions } from "./hosted-tools";

/**
 * Options of `dispatch.connect`.
 *
 * @example
 * ```ts
 * await dispatch.connect("support", "./connectors.yaml", { env: process.env, host: { toolTimeoutMs: 60_000 } });
 * ```
 */
export interface ConnectOptions {
  /** Where `${VAR}`s come from. Default: the dispatch's `env`, else `process.env`. */
  env?: Record<string, string | undefined>;
  /** Connector kinds besides the built-in `mcp` and `openapi`. */
  kinds?: readonly Connector<any>[];
  /** How the agent's tools are hosted (as `dispatch.host`). */
  host?: HostOptions;
  /** How long to wait for each connector before reporting it down. Default 20 s. */
  startTimeoutMs?: number;
  logger?: ConnectorLogger;
}

/**
 * Prepares and starts connectors for a worker: from a YAML file with a `connectors:` list, or
 * from entries given in code. Bad config throws a `ConnectorConfigError` naming the field (and
 * the file and line for a file); a connector that cannot connect is reported down, not thrown.
 * Returns the agent to host: the given one (connector tools added to its `tools`) or, for a
 * name, one with only the connector tools.
 */
export async function startWorkerConnectors(
  agent: string | HostableAgent,
  config: string | readonly unknown[],
  options: ConnectOptions,
  env: Record<string, string | undefined>,
): Promise<{ set: ConnectorSet; hostable: HostableAgent }> {
  const kinds = [...builtinConnectors, ...(options.kinds ?? [])];
  let prepared: PreparedConnector[];
  if (typeof config === "string") {
    prepared = readConnectorsFile(config, { kinds, env });
  } else {
    const parsed = ConnectorEntriesSchema.safeParse(config);
    if (!parsed.success) {
      throw new ConnectorConfigError(
        parsed.error.issues.map((issue) => ({
          path: issue.path.map((p) => (typeof p === "number" ? p : String(p))),
          message: issue.message,
        })),
      );
    }
    prepared = prepareConnectors(parsed.data, { kinds, env });
  }
  const set = await ConnectorSet.start(prepared, {
    ...(typeof agent === "string" ? {} : { tools: agent.tools }),
    ...(options.logger ? { logger: options.logger } : {}),
    ...(options.startTimeoutMs !== undefined ? { startTimeoutMs: options.startTimeoutMs } : {}),
  });
  const hostable = typeof agent === "string" ? { name: agent, tools: set.tools } : agent;
  return { set, hostable };
}
