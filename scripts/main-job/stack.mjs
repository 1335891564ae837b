// The whole sample stack on 127.0.0.1: the Patchbay server (SQLite, the apps' agent configs,
// the dispatch socket), the flight-booking worker hosting its tools for both agents, and the
// browser-assistant page with its token endpoint.
import { randomBytes } from "node:crypto";
import { copyFileSync, existsSync, mkdirSync } from "node:fs";
import { createServer as createNetServer } from "node:net";
import { join } from "node:path";
import { browserAssistant, client, flightBooking, models, root, server } from "./modules.mjs";

/** The agents of the sample apps, by the file that defines each. */
const AGENT_FILES = {
  travel: join(root, "apps/flight-booking/agents/travel.yaml"),
  assistant: join(root, "apps/browser-assistant/agents/assistant.yaml"),
};

/** Whether a real model answers: a key in the environment replaces the apps' scripted model. */
/** Its provider, model, base URL and whether it takes images; undefined for the scripted model. */
export function realModelName(env = process.env) {
  return models.describeModelFromEnv(env);
}

/**
 * Starts the stack. `dataDir` holds the SQLite files and the agent configs the server reads;
 * `ports` are tried first, and a free port is used when one is taken.
 */
export async function startStack({
  dataDir,
  ports = { patchbay: 8787, page: 5173 },
  env = process.env,
  quiet,
}) {
  // The server reads agents/<name>.yaml from one config directory; the apps keep theirs apart.
  const configDir = join(dataDir, "config");
  mkdirSync(join(configDir, "agents"), { recursive: true });
  for (const [name, file] of Object.entries(AGENT_FILES))
    copyFileSync(file, join(configDir, "agents", `${name}.yaml`));

  const apiKey = env.PATCHBAY_API_KEY ?? `pk_dev_${randomBytes(6).toString("hex")}`;
  const secret = env.PATCHBAY_API_SECRET ?? randomBytes(32).toString("hex");
  const real = realModelName(env) !== undefined;
  const options = {
    host: "127.0.0.1",
    dataDir: join(dataDir, "server"),
    configDir,
    apiKey,
    secret,
    logLevel: quiet ? "error" : "warn",
    createModel: (agent) => (real ? models.defaultModelFromEnv(env) : models.createModel(agent.model, env)),
    // What the assistant's memory connector reads from its ${...} (apps/browser-assistant/agents/assistant.yaml).
    env: {
      ...env,
      BROWSER_ASSISTANT_DIR: browserAssistant.browserAssistantConfigDir,
      PATCHBAY_MEMORY_FILE: join(dataDir, "memory.json"),
    },
  };
  const patchbay = await listenOn(ports.patchbay, (port) => server.createServer({ ...options, port }));

  const worker = flightBooking.createFlightWorker({
    url: patchbay.url,
    apiKey,
    secret,
    bookingsFile: join(dataDir, "bookings.sqlite"),
    agents: ["travel", "assistant"],
  });
  await worker.start();

  const backend = new client.Client({ baseUrl: patchbay.url, apiKey, secret });
  const built = existsSync(join(browserAssistant.browserAssistantConfigDir, "dist", "index.html"));
  const page = await browserAssistant.servePage({
    patchbayUrl: patchbay.url,
    client: backend,
    built,
    port: (await isFree(ports.page)) ? ports.page : 0,
  });

  let closing;
  return {
    patchbay,
    worker,
    page,
    apiKey,
    secret,
    /** Stops taking work, lets running calls finish, then closes everything. Safe to call twice. */
    close() {
      closing ??= (async () => {
        await page.close();
        backend.close();
        await worker.stop();
        await patchbay.close();
      })();
      return closing;
    },
  };
}

/** Starts on `port` when it is free, else on a free one (probed first, so nothing half-starts). */
async function listenOn(port, start) {
  return start((await isFree(port)) ? port : 0);
}

function isFree(port) {
  if (port === 0) return Promise.resolve(true);
  return new Promise((resolve) => {
    const probe = createNetServer()
      .once("error", () => resolve(false))
      .listen(port, "127.0.0.1", () => probe.close(() => resolve(true)));
  });
}
