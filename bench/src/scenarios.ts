// Every scenario, in the order the table prints them.
import { clusterTurnScenario } from "./cluster-turn";
import { connectorScenario } from "./connector-call";
import { executorScenario } from "./executor";
import { hostedToolCallScenario } from "./hosted-tool-call";
import { mcpScenario } from "./mcp-peer";
import { pageToolCallScenario } from "./page-tool-call";
import { pythonWorkerScenario } from "./python-worker";
import { scaleMemoryScenario } from "./scale-memory";
import { scaleWorkersScenario } from "./scale-workers";
import type { Scenario } from "./scenario";
import { turnLoopScenario } from "./turn-loop";
import { underAttackScenario } from "./under-attack";
import { wholeTurnScenario } from "./whole-turn";

export const scenarios: Scenario[] = [
  hostedToolCallScenario,
  pythonWorkerScenario,
  turnLoopScenario,
  pageToolCallScenario,
  mcpScenario("stdio"),
  mcpScenario("http"),
  wholeTurnScenario,
  scaleMemoryScenario,
  scaleWorkersScenario,
  executorScenario,
  connectorScenario,
  underAttackScenario,
];

/**
 * Scenarios run only when named with `--only` (not in a full run, nor in the smoke test): they
 * start services of their own (scenario 9: a PostgreSQL and a nats-server) and take a minute.
 */
export const onDemandScenarios: Scenario[] = [clusterTurnScenario];
