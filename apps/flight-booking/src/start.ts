// `npm run sample:flight-booking` (from the root): a Patchbay server, the flight worker and a
// chat in this terminal. Approvals are asked here too. Type a message, or pipe lines in.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { Client } from "@patchbay/client";
import { createModel, defaultModelFromEnv } from "@patchbay/models";
import { createServer } from "@patchbay/server";
import { flightBookingConfigDir } from "./index";
import { createFlightWorker } from "./worker";

const dataDir = join(flightBookingConfigDir, ".patchbay-data");
// Development credentials, new on every start. In production they come from the environment.
const apiKey = `pk_dev_${randomBytes(6).toString("hex")}`;
const secret = randomBytes(32).toString("hex");
const realModel = Boolean(process.env.OPENAI_API_KEY || process.env.ANTHROPIC_API_KEY);

const server = await createServer({
  port: Number(process.env.PORT ?? 0),
  dataDir,
  configDir: flightBookingConfigDir, // agents/travel.yaml
  apiKey,
  secret,
  logLevel: "warn",
  // The agent file names the scripted model; a key in the environment swaps in a real one.
  createModel: (agent) => (realModel ? defaultModelFromEnv(process.env) : createModel(agent.model)),
});
const worker = createFlightWorker({
  url: server.url,
  apiKey,
  secret,
  bookingsFile: join(dataDir, "bookings.sqlite"),
});
await worker.start();

const client = new Client({ baseUrl: server.url, apiKey, secret });
const session = await client.agent("travel").sessions.create({ userId: "traveller" });
const terminal = createInterface({ input: process.stdin });
// Lines are queued, so piped input works too: `printf 'flights to Lisbon\n' | npm run sample:flight-booking`.
const lines = terminal[Symbol.asyncIterator]();
async function ask(prompt: string): Promise<string | undefined> {
  process.stdout.write(prompt);
  const next = await lines.next();
  return next.done ? undefined : next.value;
}

const statuses = new Map<string, string>();
session.on("toolCall", (call) => {
  if (statuses.get(call.id) === call.status) return; // progress and held also update the item
  statuses.set(call.id, call.status);
  console.log(`  [${call.name}] ${call.status.replace("_", " ")}`);
});
session.on("progress", ({ text }) => console.log(`  ... ${text}`));
session.on("approval", async (request) => {
  const answer = await ask(`  ? ${request.title} [${request.allowTitle}/${request.declineTitle}] (y/n) `);
  await session.decide(request.id, { allowed: /^y/i.test(answer?.trim() ?? "") });
});

console.log(
  `Patchbay server on ${server.url}, flight worker connected, ${realModel ? "real" : "scripted"} model.`,
);
console.log(
  "Try: flights to New York | seat map for LH400 | book 2 seats on LH400 in business | book 12 seats on LH400",
);

async function shutdown(): Promise<void> {
  terminal.close();
  client.close();
  await worker.stop();
  await server.close();
}
process.once("SIGINT", () => void shutdown().then(() => process.exit(0)));

for (;;) {
  const line = await ask("you> ");
  if (line === undefined) break; // end of input
  if (!line.trim()) continue;
  const reply = await session.responses
    .create(line)
    .catch((error: unknown) => ({ text: `(failed: ${(error as Error).message})` }));
  console.log(`agent> ${reply.text}`);
}
await shutdown();
