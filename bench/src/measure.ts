// The measuring loops. A subject and its baseline are measured in alternating blocks within the
// same run (baseline, subject, baseline, subject...) and pooled, because absolute times on a
// shared 2-core machine drift; a ratio of two interleaved measurements is what stays stable.
import type { Budget } from "./budget";
import { type LatencySummary, median, summarize } from "./stats";

/** One way of making the call being measured, already connected and warm-capable. */
export interface Rig {
  name: string;
  call(): Promise<unknown>;
  close(): Promise<void>;
}

const now = () => performance.now();

/** Sequential calls until `calls` are done or `ms` passed; latencies in microseconds. */
export async function latencyBlock(rig: Rig, calls: number, ms: number): Promise<number[]> {
  const samples: number[] = [];
  const deadline = now() + ms;
  for (let i = 0; i < calls; i++) {
    const start = now();
    await rig.call();
    const end = now();
    samples.push((end - start) * 1_000);
    if (end >= deadline) break;
  }
  return samples;
}

/** `inFlight` lanes calling back to back until `calls` are done or `ms` passed; calls per second. */
export async function throughputBlock(
  rig: Rig,
  inFlight: number,
  calls: number,
  ms: number,
): Promise<number> {
  let done = 0;
  let started = 0;
  const start = now();
  const deadline = start + ms;
  const lane = async () => {
    while (started < calls && now() < deadline) {
      started++;
      await rig.call();
      done++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return done / ((now() - start) / 1_000);
}

/** A warm-up block counts as a rise when its rate beats the best block before it by more than this. */
const STEADY_RISE = 0.02;
/** Blocks in a row without a rise that end the warm-up. */
const STEADY_FLAT_BLOCKS = 3;

/**
 * Whether warm-up blocks' rates stopped rising: each of the last {@link STEADY_FLAT_BLOCKS} did not
 * beat the best block before it by more than {@link STEADY_RISE}.
 */
export function stoppedRising(rates: readonly number[]): boolean {
  let best = 0;
  let flat = 0;
  for (const rate of rates) {
    if (rate > best * (1 + STEADY_RISE)) {
      best = rate;
      flat = 0;
    } else flat++;
  }
  return flat >= STEADY_FLAT_BLOCKS;
}

/**
 * Warm-up: some sequential calls, then bursts of `inFlight` calls in blocks of
 * `budget.steadyBlockMs` until {@link STEADY_FLAT_BLOCKS} blocks in a row did not beat the best
 * calls/s so far by more than {@link STEADY_RISE}, or `budget.steadyWarmupMs` passed. V8 optimizes
 * a function once it has run enough, so a path reaches its steady speed after a number of calls,
 * not of seconds: a new server's whole turn runs most of its functions once per turn and takes
 * about 20,000 turns (some 15 s here), a raw socket's echo a few thousand calls. Each block's
 * calls/s go to stderr, under the rig's name.
 */
export async function warmUp(rig: Rig, budget: Budget, inFlight = budget.inFlight): Promise<void> {
  await latencyBlock(rig, budget.warmupCalls, budget.warmupMs);
  const rates: number[] = [];
  const deadline = now() + budget.steadyWarmupMs;
  do {
    const ms = Math.max(0, Math.min(budget.steadyBlockMs, deadline - now()));
    rates.push(await throughputBlock(rig, inFlight, Number.POSITIVE_INFINITY, ms));
  } while (!stoppedRising(rates) && now() < deadline);
  if (!budget.quick)
    console.error(
      `bench: warm-up of ${rig.name}, ${inFlight} in flight, calls/s per block: ${rates.map(Math.round).join(", ")}`,
    );
}

export interface Comparison<T> {
  subject: T;
  baseline: T;
}

/** p50/p99 with 1 in flight for both rigs, interleaved. */
export async function compareLatency(
  subject: Rig,
  baseline: Rig,
  budget: Budget,
): Promise<Comparison<LatencySummary>> {
  const pooled = { subject: [] as number[], baseline: [] as number[] };
  const calls = Math.ceil(budget.latencyCalls / budget.rounds);
  const ms = budget.latencyMs / budget.rounds;
  for (let round = 0; round < budget.rounds; round++) {
    pooled.baseline.push(...(await latencyBlock(baseline, calls, ms)));
    pooled.subject.push(...(await latencyBlock(subject, calls, ms)));
  }
  return { subject: summarize(pooled.subject), baseline: summarize(pooled.baseline) };
}

/** Calls per second with `inFlight` in flight for both rigs, interleaved; medians of the blocks. */
export async function compareThroughput(
  subject: Rig,
  baseline: Rig,
  budget: Budget,
  inFlight = budget.inFlight,
): Promise<Comparison<number>> {
  const rates = { subject: [] as number[], baseline: [] as number[] };
  const calls = Math.ceil(budget.throughputCalls / budget.rounds);
  const ms = budget.throughputMs / budget.rounds;
  for (let round = 0; round < budget.rounds; round++) {
    rates.baseline.push(await throughputBlock(baseline, inFlight, calls, ms));
    rates.subject.push(await throughputBlock(subject, inFlight, calls, ms));
  }
  return { subject: median(rates.subject), baseline: median(rates.baseline) };
}

/** Rejects when `promise` takes longer than `ms` (a hung peer must not hang the run). */
export function withDeadline<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms);
    }),
  ]);
}
