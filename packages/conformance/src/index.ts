export { API_KEY, DESK_AGENT, HEARTBEAT_MS, KIT_AGENTS, SECRET, TOOLS_AGENT } from "./kit-server";
export type { RunKitOptions, ScenarioResult } from "./run-kit";
export { runKit, SCENARIOS, summary } from "./run-kit";
export type { Scenario } from "./scenario";
export type { SdkWorker } from "./sdks";
export { SDK_WORKERS } from "./sdks";
