// The whole support desk in one command (`npm run sample:support-desk` from the root):
// a Patchbay server with the support agent of ./agents, the worker as its own process (it
// connects out to the server, as it would from your network), a chat through a session, and an
// SMS posted to the inbound endpoint. Everything runs on 127.0.0.1 and is removed at the end.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@patchbay/client";
import { createServer } from "@patchbay/server";
import { chat } from "./chat-script";

const appDir = join(import.meta.dirname, "..");
const dataDir = mkdtempSync(join(tmpdir(), "support-desk-"));
const apiKey = `pk_${randomBytes(8).toString("hex")}`;
const secret = randomBytes(24).toString("hex");

const server = await createServer({
  port: 0,
  dataDir: join(dataDir, "server"),
  configDir: appDir,
  apiKey,
  secret,
  logLevel: "warn",
});
console.log(`server listening on ${server.url}`);

const worker = spawn(process.execPath, ["--import", "tsx", join(appDir, "src/worker.ts")], {
  cwd: appDir,
  env: {
    ...process.env,
    PATCHBAY_URL: server.url,
    PATCHBAY_API_KEY: apiKey,
    PATCHBAY_API_SECRET: secret,
    ORDERS_DB: join(dataDir, "orders.sqlite"),
  },
  stdio: ["ignore", "pipe", "inherit"],
});
const workerLines: string[] = [];
const waiters: Array<() => void> = [];
worker.stdout.setEncoding("utf8").on("data", (chunk: string) => {
  for (const line of chunk.split("\n").filter(Boolean)) {
    console.log(line);
    workerLines.push(line);
  }
  for (const wake of waiters.splice(0)) wake();
});

/** Waits (bounded) until the worker printed a line containing `text`. */
async function workerSaid(text: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!workerLines.some((line) => line.includes(text))) {
    if (Date.now() > deadline || worker.exitCode !== null)
      throw new Error(`the worker did not say '${text}'`);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 250);
      waiters.push(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
}

const client = new Client({ baseUrl: server.url, apiKey, secret });
let failed = false;
try {
  await workerSaid("worker ready");
  console.log("\n--- a chat through a session (as a page would) ---");
  // The customer chats with a user token the backend minted, as a page does: only a user's
  // messages go to the worker first (the backend's own, sent with the API key, go to the model).
  const customer = new Client({ baseUrl: server.url });
  customer.setUser({ id: "u_ada" }, await client.createUserToken("u_ada", { expiresIn: "10m" }));
  await chat(customer, "u_ada", [
    "Hello",
    "Where is order A1001?",
    "And order B2001?",
    "What about order Z9999?",
  ]);
  customer.close();

  console.log("\n--- an SMS posted to the inbound endpoint ---");
  const res = await fetch(`${server.url}/v1/agents/support/inbound/messages`, {
    method: "POST",
    headers: { "x-api-key": apiKey, authorization: `Bearer ${secret}`, "content-type": "application/json" },
    body: JSON.stringify({
      channel: { type: "sms", id: "+15550100" },
      userId: "u_grace",
      text: "Where is order C3001?",
    }),
  });
  console.log(
    `POST /v1/agents/support/inbound/messages -> ${res.status} ${JSON.stringify(await res.json())}`,
  );
  await workerSaid("reply to sms");
} catch (error) {
  failed = true;
  console.error(error);
} finally {
  client.close();
  worker.kill("SIGTERM");
  await new Promise((resolve) => worker.once("exit", resolve));
  await server.close();
  rmSync(dataDir, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
