// Scenario 7: a call of a Patchbay connector tool over stdio (the MCP connector: the SDK's client
// inside, with the executor's validation, idempotency, timeout and progress plumbing around it)
// against the MCP SDK's own client calling the same `lookup_order` server, side by side.
import { fileURLToPath } from "node:url";
import { ConnectorEntriesSchema, ConnectorSet, mcpConnector, prepareConnectors } from "@patchbay/connectors";
import { ToolExecutor } from "@patchbay/tools";
import { ISSUE_14_GOALS } from "./goals";
import { LOOKUP_ORDER, ORDER_ARGS } from "./lookup-order";
import { startMcpStdio } from "./mcp-peer";
import { compareLatency, compareThroughput, type Rig, warmUp } from "./measure";
import { LATENCY_MEASURE, latencyRow, type Scenario, throughputMeasure, throughputRow } from "./scenario";

const ID = "7 connector call: MCP stdio";

/** The connector started from YAML-shaped config against the peer over stdio; its one tool's offered name. */
export async function startPeerConnectors(): Promise<{ set: ConnectorSet; name: string }> {
  const entries = ConnectorEntriesSchema.parse([
    {
      name: "peer",
      mcp: {
        command: process.execPath,
        args: ["--import", "tsx", fileURLToPath(new URL("./peers/mcp-server.ts", import.meta.url)), "stdio"],
        cwd: fileURLToPath(new URL("..", import.meta.url)),
      },
      approval: { tools: [] },
    },
  ]);
  const set = await ConnectorSet.start(prepareConnectors(entries, { kinds: [mcpConnector], env: {} }));
  const [status] = set.status();
  if (status?.state !== "up") throw new Error(`the connector did not start: ${status?.reason}`);
  return { set, name: `peer__${LOOKUP_ORDER.name}` };
}

/** The connector over stdio: the same peer process the SDK scenario spawns, one executor. */
export async function startConnector(): Promise<Rig> {
  const { set, name } = await startPeerConnectors();
  const executor = new ToolExecutor({ tools: set.tools, maxConcurrentCalls: 256 });
  let n = 0;
  return {
    name: "connector",
    async call() {
      const result = await executor.execute({ id: `c${n++}`, name, arguments: { ...ORDER_ARGS } });
      if (result.outcome !== "completed") throw new Error(`connector: ${result.content.text}`);
    },
    async close() {
      await set.close();
    },
  };
}

export const connectorScenario: Scenario = {
  id: ID,
  measures: (budget) => [LATENCY_MEASURE, throughputMeasure(budget.inFlight)],
  async run({ budget }) {
    // Both peers start at once: on a loaded machine each spawn (tsx compiling the peer) takes seconds.
    const started = await Promise.allSettled([startMcpStdio(), startConnector()]);
    const failed = started.find((result) => result.status === "rejected");
    if (failed) {
      await Promise.all(
        started.map((result) => (result.status === "fulfilled" ? result.value.close() : undefined)),
      );
      throw failed.reason;
    }
    const [sdk, connector] = started.map((result) => (result as PromiseFulfilledResult<Rig>).value) as [
      Rig,
      Rig,
    ];
    try {
      await warmUp(sdk, budget);
      await warmUp(connector, budget);
      const latency = await compareLatency(connector, sdk, budget);
      const throughput = await compareThroughput(connector, sdk, budget);
      return [
        latencyRow(ID, latency, sdk.name, { maxRatio: ISSUE_14_GOALS.connectorP50Ratio }),
        throughputRow(ID, throughput, sdk.name, {
          measure: throughputMeasure(budget.inFlight),
          minRatio: ISSUE_14_GOALS.connectorRateRatio,
        }),
      ];
    } finally {
      await Promise.all([connector.close(), sdk.close()]);
    }
  },
};
