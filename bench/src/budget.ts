// How long and how many: every measuring loop stops at whichever of its count or time cap comes
// first. `--quick` shrinks everything for a smoke run that only checks each row is printed.

export interface Budget {
  quick: boolean;
  /** Warm-up of each side before measuring (JIT, connection pools, caches). */
  warmupCalls: number;
  warmupMs: number;
  /**
   * After the sequential calls, bursts in blocks of `steadyBlockMs` until the rate stops rising,
   * at most `steadyWarmupMs` (see warmUp in measure.ts).
   */
  steadyWarmupMs: number;
  steadyBlockMs: number;
  /** Turns measured on a new server before any warm-up (the cold row). */
  coldCalls: number;
  /** Latency, 1 in flight: caps for each side, split over `rounds` interleaved blocks. */
  latencyCalls: number;
  latencyMs: number;
  /** Throughput: caps for each side, split over `rounds` interleaved blocks. */
  throughputCalls: number;
  throughputMs: number;
  /** Blocks of subject and baseline, alternated so drifting noise hits both alike. */
  rounds: number;
  /** Calls in flight for throughput. */
  inFlight: number;
  /** Idle sessions for the memory scenario. */
  sessionCounts: number[];
  /** Worker processes for the scaling scenario. */
  workerCounts: number[];
  /** The whole run is killed after this, whatever it is doing. */
  watchdogMs: number;
  /** One scenario is abandoned (its row says so) after this. */
  scenarioMs: number;
}

export const FULL: Budget = {
  quick: false,
  warmupCalls: 2_000,
  warmupMs: 600,
  steadyWarmupMs: 15_000,
  steadyBlockMs: 1_000,
  coldCalls: 300,
  latencyCalls: 20_000,
  latencyMs: 3_000,
  throughputCalls: 400_000,
  throughputMs: 3_000,
  rounds: 3,
  inFlight: 64,
  sessionCounts: [1_000, 5_000],
  workerCounts: [1, 2, 4],
  watchdogMs: 600_000,
  scenarioMs: 120_000,
};

export const QUICK: Budget = {
  quick: true,
  warmupCalls: 20,
  warmupMs: 50,
  steadyWarmupMs: 50,
  steadyBlockMs: 50,
  coldCalls: 10,
  latencyCalls: 100,
  latencyMs: 100,
  throughputCalls: 500,
  throughputMs: 100,
  rounds: 1,
  inFlight: 64,
  sessionCounts: [20, 50],
  workerCounts: [1, 2],
  watchdogMs: 120_000,
  scenarioMs: 30_000,
};
