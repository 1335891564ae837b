import {
  builtinConnectors,
  type Connector,
  ConnectorConfigError,
  ConnectorSet,
  type ConnectorStatus,
  type PreparedConnector,
  prepareConnectors,
} from "@patchbay/connectors";
import type { JsonObject, ToolResult, ToolSpec } from "@patchbay/protocol";
import { type AgentConfig, AgentConfigError } from "../config/agent-config";
import type { CancelReason, ToolCallHandlers } from "../extensions/dispatch-seams";
import type { Logger } from "../observability/logger";
import type { ServerToolBackend } from "./server-tool-backend";
import type { ArgumentCheck, RoutedToolCall, ToolBackend } from "./tool-backend";

/**
 * Checks the connectors of every agent (its `connectors:` entries) against the known kinds, with
 * `${VAR}`s filled from `env`. Bad config (an unknown kind, a config the kind refuses, an unset
 * `${VAR}`) throws an {@link AgentConfigError} with the agent file, line and field. Nothing is
 * started yet: see {@link startAgentConnectors}.
 */
export function prepareAgentConnectors(
  agents: Iterable<AgentConfig>,
  options: { kinds?: readonly Connector<any>[]; env: Record<string, string | undefined> },
): Map<string, PreparedConnector[]> {
  const kinds = [...builtinConnectors, ...(options.kinds ?? [])];
  const prepared = new Map<string, PreparedConnector[]>();
  for (const agent of agents) {
    if (agent.connectors.length > 0) prepared.set(agent.id, prepareFor(agent, kinds, options.env));
  }
  return prepared;
}

/**
 * Starts prepared connectors, one set per agent. A connector that cannot connect does not
 * throw: it is reported down in the logs and on `/readyz`, and its tools say why.
 */
export async function startAgentConnectors(
  prepared: ReadonlyMap<string, PreparedConnector[]>,
  options: { logger: Logger; startTimeoutMs?: number; reserved?: (name: string) => boolean },
): Promise<Map<string, ConnectorSet>> {
  const sets = new Map<string, ConnectorSet>();
  try {
    await Promise.all(
      [...prepared].map(async ([agentId, connectors]) => {
        const set = await ConnectorSet.start(connectors, {
          logger: options.logger.child({ agent: agentId }),
          ...(options.startTimeoutMs !== undefined ? { startTimeoutMs: options.startTimeoutMs } : {}),
          ...(options.reserved ? { reserved: options.reserved } : {}),
        });
        sets.set(agentId, set);
      }),
    );
  } catch (error) {
    await Promise.all([...sets.values()].map((set) => set.close()));
    throw error;
  }
  return sets;
}

function prepareFor(
  agent: AgentConfig,
  kinds: readonly Connector<any>[],
  env: Record<string, string | undefined>,
) {
  try {
    return prepareConnectors(agent.connectors, { kinds, env });
  } catch (error) {
    if (!(error instanceof ConnectorConfigError)) throw error;
    throw new AgentConfigError(
      agent.file,
      error.issues.map((issue) => {
        const path = ["connectors", ...issue.path];
        return { path: path.join("."), message: issue.message, ...(agent.locate?.(path, issue.atKey) ?? {}) };
      }),
    );
  }
}

/** What `/readyz` says about connectors: every one that is not up, by agent, with why. */
export function connectorReadiness(
  sets: ReadonlyMap<string, ConnectorSet>,
): (ConnectorStatus & { agent: string })[] {
  const out: (ConnectorStatus & { agent: string })[] = [];
  for (const [agent, set] of sets) {
    for (const status of set.status()) if (status.state !== "up") out.push({ agent, ...status });
  }
  return out;
}

/**
 * Two in-process backends as one (the server's `tools` first, then the agent's connector tools):
 * a call goes to the first that has its tool.
 */
export class ChainedToolBackend implements ToolBackend {
  readonly location = "server" as const;
  readonly remote = false;
  /** Which backend runs each call in flight, so a cancel reaches that one. */
  private readonly owners = new Map<string, ServerToolBackend>();
  constructor(private readonly backends: readonly ServerToolBackend[]) {}

  specs(): ToolSpec[] {
    return this.backends.flatMap((backend) => backend.specs());
  }

  has(name: string): boolean {
    return this.backends.some((backend) => backend.has(name));
  }

  timeoutCeilingMs(spec: ToolSpec): number {
    return this.backendOf(spec.name).timeoutCeilingMs();
  }

  checkArguments(spec: ToolSpec, args: JsonObject): Promise<ArgumentCheck> {
    return this.backendOf(spec.name).checkArguments(spec, args);
  }

  async run(call: RoutedToolCall, handlers: ToolCallHandlers): Promise<ToolResult> {
    const backend = this.backendOf(call.spec.name);
    this.owners.set(call.callId, backend);
    try {
      return await backend.run(call, handlers);
    } finally {
      this.owners.delete(call.callId);
    }
  }

  cancel(callId: string, reason: CancelReason): void {
    this.owners.get(callId)?.cancel(callId, reason);
  }

  private backendOf(name: string): ServerToolBackend {
    return this.backends.find((candidate) => candidate.has(name)) ?? this.backends[0]!;
  }
}
