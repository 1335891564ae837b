// Runs the support-desk worker against a Patchbay server:
//   PATCHBAY_URL=http://127.0.0.1:8787 PATCHBAY_API_KEY=... PATCHBAY_API_SECRET=... npm run worker
// It connects out to the server; nothing here needs to be reachable. Ctrl-C drains it.
import { join } from "node:path";
import { Client } from "@patchbay/client";
import { openOrders } from "./orders";
import { createSupportWorker } from "./support-worker";

const url = process.env.PATCHBAY_URL ?? "http://127.0.0.1:8787";
const client = new Client({
  baseUrl: url,
  apiKey: process.env.PATCHBAY_API_KEY,
  secret: process.env.PATCHBAY_API_SECRET,
});
const orders = openOrders(process.env.ORDERS_DB ?? join(import.meta.dirname, "..", "orders.sqlite"));
const worker = createSupportWorker({
  client,
  orders,
  dispatch: { capacity: Number(process.env.WORKER_CAPACITY ?? 4), url },
  log: (line) => console.log(`[worker] ${line}`),
});

for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.once(signal, () => {
    void worker.stop({ timeoutMs: 10_000 }).then(({ drained }) => {
      console.log(`[worker] stopped${drained ? "" : " (some work did not finish in time)"}`);
      client.close();
      orders.close();
      process.exit(drained ? 0 : 1);
    });
  });
}

worker.run().catch((error: Error & { code?: string }) => {
  console.error(`[worker] ${error.code ?? "error"}: ${error.message}`);
  process.exit(1);
});
