// Runs the scenarios against one worker command, each against a fresh server and fresh workers.
import { startWorld } from "./kit-server";
import type { Scenario } from "./scenario";
import { approvalScenarios } from "./scenarios-approval";
import { callScenarios } from "./scenarios-calls";
import { connectionScenarios } from "./scenarios-connection";

/** Every scenario of the kit, in the order they run. */
export const SCENARIOS: readonly Scenario[] = [
  ...connectionScenarios,
  ...callScenarios,
  ...approvalScenarios,
];

/** The outcome of one scenario. */
export interface ScenarioResult {
  name: string;
  ok: boolean;
  error?: string;
  ms: number;
}

/** What `runKit` was asked. */
export interface RunKitOptions {
  /** The worker under test, as a command line (program first). */
  command: string[];
  /** Run only the scenarios whose name contains one of these. */
  only?: string[];
  /** Run only the scenarios with exactly these names. */
  scenarios?: string[];
  /** Where each result line goes. Default: nowhere. */
  log?: (line: string) => void;
  /** The most one scenario may take. Default 40 s. */
  scenarioTimeoutMs?: number;
}

/** Runs the kit; resolves with every scenario's outcome. */
export async function runKit(options: RunKitOptions): Promise<ScenarioResult[]> {
  const log = options.log ?? (() => undefined);
  const chosen = SCENARIOS.filter(
    (s) =>
      (!options.only?.length || options.only.some((part) => s.name.includes(part))) &&
      (!options.scenarios || options.scenarios.includes(s.name)),
  );
  const results: ScenarioResult[] = [];
  for (const scenario of chosen) {
    const started = Date.now();
    const world = await startWorld(options.command, scenario.heartbeatMs);
    let error: string | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const limit = options.scenarioTimeoutMs ?? 40_000;
      await Promise.race([
        scenario.run(world),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error(`the scenario took over ${limit} ms`)), limit);
        }),
      ]);
      const invalid = world.proxy.invalidFrames();
      if (invalid.length > 0) error = `the worker sent frames that do not decode: ${invalid.join("; ")}`;
    } catch (thrown) {
      error = (thrown as Error).message;
      const output = world.workers
        .map((w) => w.output.trim())
        .filter(Boolean)
        .join("\n---\n");
      if (output) error += `\n  worker output (tail):\n${indent(output.slice(-1_200))}`;
    } finally {
      clearTimeout(timer);
      await world.close();
    }
    const result: ScenarioResult = {
      name: scenario.name,
      ok: !error,
      ms: Date.now() - started,
      ...(error ? { error } : {}),
    };
    results.push(result);
    log(result.ok ? `  ok    ${scenario.name} (${result.ms} ms)` : `  FAIL  ${scenario.name}: ${error}`);
  }
  return results;
}

function indent(text: string): string {
  return text
    .split("\n")
    .map((line) => `    ${line}`)
    .join("\n");
}

/** The summary line every Patchbay test run ends with. */
export function summary(results: readonly ScenarioResult[]): string {
  const passed = results.filter((r) => r.ok).length;
  return `${passed} passed, ${results.length - passed} failed`;
}
