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

/** A goal's cell: what it asks and whether this run met it; several join with "; ". */
export function goalCell(goals: [asks: string, met: boolean][]): string | undefined {
  if (goals.length === 0) return undefined;
  return goals.map(([asks, met]) => `${asks}: ${met ? "met" : "missed"}`).join("; ");
}

/**
 * A latency row: p50 and p99 of subject and baseline, ratio of each. Its goals, if any: the
 * p50's ratio (`maxRatio`), the p99's ratio (`maxP99Ratio`), the subject's own p50 in µs
 * (`maxP50Micros`).
 */
export function latencyRow(
  scenario: string,
  result: Comparison<LatencySummary>,
  baselineName: string,
  options: { measure?: string; maxRatio?: number; maxP99Ratio?: number; maxP50Micros?: number } = {},
): Row {
  const { subject, baseline } = result;
  const p50 = subject.p50 / baseline.p50;
  const p99 = subject.p99 / baseline.p99;
  const row: Row = {
    scenario,
    measure: options.measure ?? LATENCY_MEASURE,
    subject: `${formatMicros(subject.p50)} / ${formatMicros(subject.p99)}`,
    baseline: `${baselineName}: ${formatMicros(baseline.p50)} / ${formatMicros(baseline.p99)}`,
    ratio: `${formatRatio(p50)} / ${formatRatio(p99)}`,
  };
  const goals: [string, boolean][] = [];
  if (options.maxRatio !== undefined) goals.push([`p50 <= ${options.maxRatio}x`, p50 <= options.maxRatio]);
  if (options.maxP99Ratio !== undefined)
    goals.push([`p99 <= ${options.maxP99Ratio}x`, p99 <= options.maxP99Ratio]);
  if (options.maxP50Micros !== undefined)
    goals.push([`p50 <= ${formatMicros(options.maxP50Micros)}`, subject.p50 <= options.maxP50Micros]);
  const target = goalCell(goals);
  if (target !== undefined) row.target = target;
  return row;
}

/**
 * A throughput row: calls per second of subject and baseline, and their ratio. Its goals, if
 * any: the ratio (`minRatio`), the subject's own rate (`minRate`).
 */
export function throughputRow(
  scenario: string,
  result: Comparison<number>,
  baselineName: string,
  options: { measure: string; minRatio?: number; minRate?: number; unit?: string },
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
  const goals: [string, boolean][] = [];
  if (options.minRatio !== undefined) goals.push([`>= ${options.minRatio}x`, ratio >= options.minRatio]);
  if (options.minRate !== undefined)
    goals.push([`>= ${formatRate(options.minRate)}${unit}`, result.subject >= options.minRate]);
  const target = goalCell(goals);
  if (target !== undefined) row.target = target;
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
