// `npm run sample:browser-assistant` (from the root): Patchbay, the flight worker (for the
// hosted tools), and the page with its token endpoint, all on 127.0.0.1. Ctrl-C stops it all.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { createFlightWorker } from "@patchbay/app-flight-booking";
import { Client } from "@patchbay/client";
import { createModel, defaultModelFromEnv } from "@patchbay/models";
import { createServer } from "@patchbay/server";
import { appDir, servePage } from "./serve-page";

const dataDir = join(appDir, ".patchbay-data");
// Development credentials, new on every start. In production they come from the environment.
const apiKey = `pk_dev_${randomBytes(6).toString("hex")}`;
const secret = randomBytes(32).toString("hex");
const realModel = Boolean(process.env.OPENAI_API_KEY || process.env.ANTHROPIC_API_KEY);

const patchbay = await createServer({
  port: 0,
  dataDir,
  configDir: appDir, // agents/assistant.yaml
  apiKey,
  secret,
  logLevel: "warn",
  createModel: (agent) => (realModel ? defaultModelFromEnv(process.env) : createModel(agent.model)),
  // What the memory connector of agents/assistant.yaml reads from its ${...}.
  env: { ...process.env, BROWSER_ASSISTANT_DIR: appDir, PATCHBAY_MEMORY_FILE: join(dataDir, "memory.json") },
});
const worker = createFlightWorker({
  url: patchbay.url,
  apiKey,
  secret,
  bookingsFile: join(dataDir, "bookings.sqlite"),
  agents: ["assistant"],
});
await worker.start();

const backend = new Client({ baseUrl: patchbay.url, apiKey, secret });
const page = await servePage({
  patchbayUrl: patchbay.url,
  client: backend,
  port: Number(process.env.PORT ?? 5173),
});
console.log(
  `Browser assistant: ${page.url}  (Patchbay ${patchbay.url}, ${realModel ? "real" : "scripted"} model)`,
);

process.once("SIGINT", async () => {
  await page.close();
  backend.close();
  await worker.stop();
  await patchbay.close();
  process.exit(0);
});
