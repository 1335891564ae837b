// Scenario 2: a page tool call, server to client and back, against the raw floor.
//
// The server runs in this process; the page is a `@patchbay/client` session in a child process
// that brought `lookup_order` as a page tool. The rig calls the session's `PageToolBackend.call`
// (what the turn loop does once a page tool call is validated and allowed): it commits the
// `tool.call` event to SQLite, the event goes out on the session's socket, the client runs the
// tool through its executor and answers `tool.result`, and the call settles.
import { type Peer, spawnPeer } from "./children";
import { ISSUE_20_GOALS } from "./goals";
import { BENCH_USER, LOOKUP_ORDER, ORDER_ARGS } from "./lookup-order";
import { compareLatency, compareThroughput, type Rig, warmUp } from "./measure";
import { type BenchServer, startBenchServer } from "./patchbay-server";
import { LATENCY_MEASURE, latencyRow, type Scenario, throughputMeasure, throughputRow } from "./scenario";

const noHandlers = { progress() {}, say() {}, hold: () => ({ accepted: true }), attempt() {} };

/** Page tool calls through a page in a child process (`page.kill()` once the rig is closed). */
export async function pageRig(bench: BenchServer): Promise<{ rig: Rig; page: Peer<{ sessionId: string }> }> {
  const page = await spawnPeer<{ sessionId: string }>("page-client", { args: [bench.server.url] });
  try {
    const { live, release } = await bench.server.sessions.acquire({ kind: "backend" }, page.ready.sessionId);
    if (!live.runtime.hasPageTool(LOOKUP_ORDER.name)) throw new Error("the page did not bring lookup_order");
    const spec = live.runtime.pageToolSpecs().find((s) => s.name === LOOKUP_ORDER.name)!;
    let next = 0;
    const rig: Rig = {
      name: "page",
      async call() {
        const result = await live.pages.run(
          {
            callId: `call_p${(next++).toString(36)}`,
            responseId: "r_bench",
            spec,
            arguments: { ...ORDER_ARGS },
            timeoutMs: 30_000,
            user: BENCH_USER,
          },
          noHandlers,
        );
        if (result.outcome !== "completed")
          throw new Error(`page call ${result.outcome}: ${result.content.text}`);
      },
      async close() {
        release();
      },
    };
    return { rig, page };
  } catch (error) {
    await page.kill();
    throw error;
  }
}

export const pageToolCallScenario: Scenario = {
  id: "2 page tool call",
  measures: (budget) => [LATENCY_MEASURE, throughputMeasure(budget.inFlight)],
  async run({ budget, floor }) {
    const bench = await startBenchServer();
    try {
      const { rig, page } = await pageRig(bench);
      try {
        await warmUp(rig, budget);
        const latency = await compareLatency(rig, floor, budget);
        const throughput = await compareThroughput(rig, floor, budget);
        await rig.close();
        const id = pageToolCallScenario.id;
        return [
          latencyRow(id, latency, floor.name, { maxP99Ratio: ISSUE_20_GOALS.pageP99Ratio }),
          throughputRow(id, throughput, floor.name, {
            measure: throughputMeasure(budget.inFlight),
            minRatio: ISSUE_20_GOALS.pageRateRatio,
          }),
        ];
      } finally {
        await page.kill();
      }
    } finally {
      await bench.close();
    }
  },
};
