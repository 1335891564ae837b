// What a scenario is, and the rows it prints. A scenario declares its rows' measures up front so
// the table keeps every row even when the scenario fails or runs out of time.
import type { Budget } from "./budget";
import type { Comparison, Rig } from "./measure";
import { formatMicros, formatRate, formatRatio, type LatencySummary } from "./stats";
import type { Row } from "./table";

export interface BenchContext {
  budget: Budget;
  /** The raw `ws` floor, connected for the whole run. */
  floor: Rig;
}

export interface Scenario {
  /** Stable id printed in the first column, e.g. "1 hosted tool call". */
  id: string;
  /** The measure of each row it prints, in order (used for placeholder rows on failure). */
  measures(budget: Budget): string[];
  run(context: BenchContext): Promise<Row[]>;
}

export const LATENCY_MEASURE = "latency p50 / p99, 1 in flight";
export const throughputMeasure = (inFlight: number) => `calls/s, ${inFlight} in flight`;

/** A latency row: p50 and p99 of subject and baseline, ratio of each. */
export function latencyRow(
  scenario: string,
  result: Comparison<LatencySummary>,
  baselineName: string,
  options: { measure?: string; maxRatio?: number } = {},
): Row {
  const { subject, baseline } = result;
  const p50 = subject.p50 / baseline.p50;
  const row: Row = {
    scenario,
    measure: options.measure ?? LATENCY_MEASURE,
    subject: `${formatMicros(subject.p50)} / ${formatMicros(subject.p99)}`,
    baseline: `${baselineName}: ${formatMicros(baseline.p50)} / ${formatMicros(baseline.p99)}`,
    ratio: `${formatRatio(p50)} / ${formatRatio(subject.p99 / baseline.p99)}`,
  };
  if (options.maxRatio !== undefined)
    row.target = `p50 <= ${options.maxRatio}x: ${p50 <= options.maxRatio ? "met" : "missed"}`;
  return row;
}

/** A throughput row: calls per second of subject and baseline, and their ratio. */
export function throughputRow(
  scenario: string,
  result: Comparison<number>,
  baselineName: string,
  options: { measure: string; minRatio?: number; unit?: string },
): Row {
  const ratio = result.subject / result.baseline;
  const unit = options.unit ?? "";
  const row: Row = {
    scenario,
    measure: options.measure,
    subject: `${formatRate(result.subject)}${unit}`,
    baseline: `${baselineName}: ${formatRate(result.baseline)}`,
    ratio: formatRatio(ratio),
  };
  if (options.minRatio !== undefined)
    row.target = `>= ${options.minRatio}x: ${ratio >= options.minRatio ? "met" : "missed"}`;
  return row;
}

/** The rows of a scenario that could not finish, saying why. */
export function failedRows(scenario: Scenario, budget: Budget, error: unknown): Row[] {
  const message = (error instanceof Error ? error.message : String(error)).split("\n")[0]!.slice(0, 120);
  return scenario.measures(budget).map((measure) => ({
    scenario: scenario.id,
    measure,
    subject: `not measured: ${message}`,
    baseline: "",
    ratio: "n/a",
  }));
}
