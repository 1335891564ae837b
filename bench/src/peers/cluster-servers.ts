// The servers of the cluster scenario in one process: one server on its own Postgres database
// (the single-node baseline) and three nodes of a cluster on another database and one NATS
// server. argv: <single database URL> <cluster database URL> <NATS URL>. It also makes hosted
// calls on request, from the baseline's router or node B's (whose calls cross to node C). Blocks of the two sides
// alternate, so they never compete for this process; the three nodes do share it (a real
// cluster gives each its own CPU), which makes the cluster's figures, if anything, pessimistic.
import { callLookupOrder } from "../lookup-order";
import { type BenchServer, startBenchServer } from "../patchbay-server";
import { failed, onRequest, ready } from "./peer-runtime";

let next = 0;

/** One hosted call through a server's router, as a turn makes it (node B's: across the bus). */
async function hostedCall(bench: BenchServer): Promise<void> {
  const router = bench.server.hostedTools;
  if (!router) throw new Error("the server has no hosted tool router");
  await callLookupOrder(router, `call_c${(next++).toString(36)}`);
}

const [singleDb, clusterDb, natsUrl] = process.argv.slice(2);
const started: BenchServer[] = [];
try {
  if (!singleDb || !clusterDb || !natsUrl)
    throw new Error("usage: cluster-servers <single db> <cluster db> <nats url>");
  started.push(await startBenchServer({ databaseUrl: singleDb }));
  for (let i = 0; i < 3; i++) started.push(await startBenchServer({ databaseUrl: clusterDb, natsUrl }));
  process.on("disconnect", () => void Promise.all(started.map((bench) => bench.close())));
  const [single, a, b, c] = started.map((bench) => bench.server.url);
  // `{ hosted: "single" | "b", calls }`: that many hosted calls one after another, from that
  // server's router (node B has no worker: its calls go to node C's over NATS).
  onRequest(async (message) => {
    const bench = message.hosted === "b" ? started[2]! : started[0]!;
    for (let i = 0; i < Number(message.calls ?? 1); i++) await hostedCall(bench);
    return {};
  });
  ready({ single, a, b, c });
} catch (error) {
  failed(error);
}
