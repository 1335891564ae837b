// The servers of the cluster scenario in one process: one server on its own Postgres database
// (the single-node baseline) and three nodes of a cluster on another database and one NATS
// server. argv: <single database URL> <cluster database URL> <NATS URL>. Blocks of the two sides
// alternate, so they never compete for this process; the three nodes do share it (a real
// cluster gives each its own CPU), which makes the cluster's figures, if anything, pessimistic.
import { type BenchServer, startBenchServer } from "../patchbay-server";
import { failed, ready } from "./peer-runtime";

const [singleDb, clusterDb, natsUrl] = process.argv.slice(2);
const started: BenchServer[] = [];
try {
  if (!singleDb || !clusterDb || !natsUrl)
    throw new Error("usage: cluster-servers <single db> <cluster db> <nats url>");
  started.push(await startBenchServer({ databaseUrl: singleDb }));
  for (let i = 0; i < 3; i++) started.push(await startBenchServer({ databaseUrl: clusterDb, natsUrl }));
  process.on("disconnect", () => void Promise.all(started.map((bench) => bench.close())));
  const [single, a, b, c] = started.map((bench) => bench.server.url);
  ready({ single, a, b, c });
} catch (error) {
  failed(error);
}
