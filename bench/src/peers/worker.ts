// A dispatch worker hosting `lookup_order` for the `support` agent, as the dispatch README shows.
// argv: <server base url>
import { writeHeapSnapshot } from "node:v8";
import { Client } from "@patchbay/client";
import { Dispatch } from "@patchbay/dispatch";
import { BENCH_API_KEY, BENCH_SECRET } from "../credentials";
import { BENCH_AGENT, LOOKUP_ORDER, lookupOrderText } from "../lookup-order";
import { startCpuSampling, stopCpuSampling } from "../probes/cpu-sampling";
import { startGcStats, stopGcStats } from "../probes/gc-stats";
import { startHeapSampling, stopHeapSampling } from "../probes/heap-sampling";
import { failed, onRequest, ready } from "./peer-runtime";

const url = process.argv[2];
if (!url) failed("usage: worker <server url>");
try {
  const client = new Client({ baseUrl: url, apiKey: BENCH_API_KEY, secret: BENCH_SECRET });
  const agent = client.agent(BENCH_AGENT);
  agent.tools.register({
    ...LOOKUP_ORDER,
    run: async ({ order_id }: { order_id: string }) => lookupOrderText(order_id),
  });
  const dispatch = new Dispatch({ capacity: 8, url, apiKey: BENCH_API_KEY, secret: BENCH_SECRET });
  dispatch.host(agent, { toolTimeoutMs: 60_000 });
  dispatch.once("ready", ({ workerId }) => ready({ workerId }));
  // The hosted-call probe reads this process's garbage collection over a block of calls.
  onRequest((message) => {
    if (message.type === "gc-start") startGcStats();
    else if (message.type === "gc-stop") return { gc: stopGcStats() };
    else if (message.type === "heap-start") return startHeapSampling();
    else if (message.type === "heap-snapshot") return { file: writeHeapSnapshot(String(message.file)) };
    else if (message.type === "heap-stop") return stopHeapSampling(String(message.file));
    else if (message.type === "cpu-start") return startCpuSampling();
    else if (message.type === "cpu-stop") return stopCpuSampling(String(message.file));
    return {};
  });
  dispatch.on("error", (error) => console.error("bench worker:", error));
  await dispatch.run();
} catch (error) {
  failed(error);
}
