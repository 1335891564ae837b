// Scenario: what the ToolExecutor adds to one tool call (argument validation with a zod schema
// of one string field, the idempotency lookup and store, timers, slots, the result object)
// compared with calling the tool's function directly. Both sides run in alternating blocks in
// the same process so that machine drift hits them alike, and every loop stops at whichever of
// its call count or time slice comes first.
//
// Run it on its own: node --import tsx bench/src/executor-overhead.ts [--iterations N] [--max-ms M]
import { pathToFileURL } from "node:url";
import { ToolExecutor, Tools } from "@patchbay/tools";
import { z } from "zod";

/** Figures for one side of the comparison. */
export interface OverheadSide {
  /** Calls measured (warm-up excluded). */
  calls: number;
  /** Time spent in the measured calls, in milliseconds. */
  totalMs: number;
  /** Mean time per call over all measured calls, in microseconds (GC pauses included). */
  perCallUs: number;
  /** Median over the blocks of each block's mean per call, in microseconds (robust to a noisy block). */
  medianBlockUs: number;
  /** Calls per second at one call in flight. */
  callsPerSecond: number;
}

/**
 * What {@link runExecutorOverhead} returns. `ratio` is subject over baseline per call (how many
 * times slower a call through the executor is than a direct call) and `overheadUs` the
 * difference, the executor's own cost per call in microseconds; both use the median block of
 * each side, because a direct call is so short that one GC pause in a block would swamp a mean.
 */
export interface ExecutorOverheadResult {
  name: "executor-overhead";
  description: string;
  baseline: OverheadSide;
  subject: OverheadSide;
  ratio: number;
  overheadUs: number;
  /** Alternating blocks per side. */
  rounds: number;
  /** Wall time of the whole scenario, warm-up included, in milliseconds. */
  elapsedMs: number;
  /** Whether a time slice ran out before the call count was reached. */
  timeCapped: boolean;
}

const now = () => performance.now();

interface Block {
  calls: number;
  ms: number;
}

async function block(
  call: (i: number) => Promise<unknown>,
  calls: number,
  ms: number,
  offset: number,
): Promise<Block> {
  const start = now();
  const deadline = start + ms;
  let done = 0;
  // The clock is read every 64 calls so that reading it does not weigh on a direct call.
  while (done < calls) {
    await call(offset + done);
    done++;
    if ((done & 63) === 0 && now() >= deadline) break;
  }
  return { calls: done, ms: now() - start };
}

function summarize(blocks: Block[]): OverheadSide {
  const calls = blocks.reduce((n, b) => n + b.calls, 0);
  const totalMs = blocks.reduce((n, b) => n + b.ms, 0);
  const perBlock = blocks.filter((b) => b.calls > 0).map((b) => (b.ms * 1_000) / b.calls);
  perBlock.sort((a, b) => a - b);
  const mid = perBlock.length >> 1;
  const medianBlockUs =
    perBlock.length === 0
      ? Number.NaN
      : perBlock.length % 2
        ? perBlock[mid]!
        : (perBlock[mid - 1]! + perBlock[mid]!) / 2;
  return {
    calls,
    totalMs,
    perCallUs: calls ? (totalMs * 1_000) / calls : Number.NaN,
    medianBlockUs,
    callsPerSecond: totalMs ? calls / (totalMs / 1_000) : Number.NaN,
  };
}

/**
 * Measures the executor's overhead per call: `ToolExecutor.execute` of a tool with a zod schema
 * of one string field (subject) against awaiting the tool's function directly (baseline), in one
 * run. `iterations` caps the measured calls per side (default 20 000); `maxMs` caps the whole
 * scenario's time (default 4 000 ms), warm-up included; `rounds` is how many alternating blocks
 * each side gets (default 7).
 *
 * @example
 * ```ts
 * const { ratio, overheadUs } = await runExecutorOverhead({ iterations: 5_000, maxMs: 2_000 });
 * console.log(`executor adds ${overheadUs.toFixed(1)} µs per call (${ratio.toFixed(0)}x a direct call)`);
 * ```
 */
export async function runExecutorOverhead(
  options: { iterations?: number; maxMs?: number; rounds?: number } = {},
): Promise<ExecutorOverheadResult> {
  const iterations = Math.max(1, Math.floor(options.iterations ?? 20_000));
  const maxMs = Math.max(10, options.maxMs ?? 4_000);
  const rounds = Math.max(1, Math.floor(options.rounds ?? 7));
  const started = now();

  const run = async ({ text }: { text: string }) => text.length;
  const tools = new Tools().register({
    name: "echo_length",
    description: "Counts the characters of a text",
    parameters: z.object({ text: z.string() }),
    run,
  });
  const executor = new ToolExecutor({ tools, sessionId: "bench" });
  const args = { text: "hello, tools" };

  const baselineCall = () => run(args);
  const subjectCall = async (i: number) => {
    const result = await executor.execute({ id: `call_${i}`, name: "echo_length", arguments: args });
    if (result.outcome !== "completed") throw new Error(`executor call failed: ${result.content.text}`);
    return result;
  };

  // Up to a fifth of the budget warms both sides up (JIT, the store filling to its LRU size).
  const warmCalls = Math.min(3_000, Math.max(200, Math.floor(iterations / 5)));
  const warmMs = maxMs / 5 / 2;
  await block(baselineCall, warmCalls, warmMs, 0);
  await block(subjectCall, warmCalls, warmMs, 0);

  const sliceMs = (maxMs - (now() - started)) / (rounds * 2);
  const perBlock = Math.ceil(iterations / rounds);
  const baselineBlocks: Block[] = [];
  const subjectBlocks: Block[] = [];
  let timeCapped = false;
  let offset = 1_000_000;
  for (let r = 0; r < rounds; r++) {
    const baseline = await block(baselineCall, perBlock, sliceMs, 0);
    const subject = await block(subjectCall, perBlock, sliceMs, offset);
    offset += subject.calls;
    baselineBlocks.push(baseline);
    subjectBlocks.push(subject);
    if (baseline.calls < perBlock || subject.calls < perBlock) timeCapped = true;
  }

  const baseline = summarize(baselineBlocks);
  const subject = summarize(subjectBlocks);
  return {
    name: "executor-overhead",
    description: "ToolExecutor.execute (zod schema, one string field) vs awaiting the tool function directly",
    baseline,
    subject,
    ratio: subject.medianBlockUs / baseline.medianBlockUs,
    overheadUs: subject.medianBlockUs - baseline.medianBlockUs,
    rounds,
    elapsedMs: now() - started,
    timeCapped,
  };
}

function flag(name: string): number | undefined {
  const index = process.argv.indexOf(name);
  if (index < 0) return undefined;
  const value = Number(process.argv[index + 1]);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} needs a positive number`);
  return value;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const result = await runExecutorOverhead({ iterations: flag("--iterations"), maxMs: flag("--max-ms") });
  const us = (n: number) => `${n < 10 ? n.toFixed(2) : n.toFixed(1)} µs`;
  const side = (label: string, s: OverheadSide) =>
    `${label.padEnd(9)} ${us(s.medianBlockUs).padStart(10)} per call (median block; mean ${us(s.perCallUs)}), ` +
    `${Math.round(s.callsPerSecond).toLocaleString("en-US")} calls/s over ${s.calls.toLocaleString("en-US")} calls`;
  console.log(`${result.name}: ${result.description}`);
  console.log(side("baseline", result.baseline));
  console.log(side("executor", result.subject));
  console.log(
    `overhead  ${us(result.overheadUs)} per call, ratio ${result.ratio.toFixed(1)}x over ${result.rounds} interleaved rounds` +
      `${result.timeCapped ? " (time-capped)" : ""}, ${Math.round(result.elapsedMs)} ms in all`,
  );
}
