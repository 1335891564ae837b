// Runs the documentation's TypeScript samples (already compiled to .mjs by samples.test.ts) one
// after another in this one process, against the Patchbay server the test started. Prints one
// `SAMPLE_RESULT <json>` line per sample. Used only by docs/test/samples.test.ts.
//
// What a sample declares (`declare const agent: AgentHandle;`) comes from `fixtures` below: the
// Patchbay objects are real ones on the test server, the user's own systems (an airline, an order
// database) are small stand-ins. The PATCHBAY_* variables are set only for a sample that names
// them, so a sample that needs them and does not say so fails here as it would for a reader.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, Tools } from "@patchbay/client";
import { Dispatch } from "@patchbay/dispatch";
import { decodeFrame } from "@patchbay/protocol";
import Database from "better-sqlite3";

const manifest = JSON.parse(readFileSync(process.argv[2], "utf8"));
const { url, apiKey, secret } = manifest.server;
const SAMPLE_TIMEOUT_MS = 20_000;
/** What earlier samples of the same file exported, for a sample that uses it ("from the section above"). */
const exported = new Map();
const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function withTimeout(promise, ms, what) {
  let timer;
  try {
    return await Promise.race([
      promise,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** The values a sample may declare, by name. Created per sample, so samples never share state. */
function fixtures(owned) {
  const backend = () => {
    const client = new Client({ baseUrl: url, apiKey, secret });
    owned.clients.push(client);
    return client;
  };
  const memory = new Map();
  const flight = { id: "PB-7Q2K" };
  return {
    client: () => backend(),
    backend: () => backend(),
    agent: () => backend().agent("support"),
    session: async () => {
      const session = await backend().agent("support").sessions.create({ userId: "u_docs" });
      return session;
    },
    tools: () => new Tools(),
    sessionId: async () => (await backend().agent("support").sessions.create({ userId: "u_docs" })).id,
    messageId: () => undefined,
    airline: () => ({
      book: async () => flight,
      holdSeat: async () => "14C",
      search: async (destination) => [`TP123 to ${destination}`],
      seatMapUrl: async (flightId) => `https://example.com/seat-maps/${flightId}.png`,
    }),
    orders: () => ({ find: async () => ({ status: "shipped" }) }),
    bookings: () => ({ book: async (flightId, seats, cabin) => `Booked ${seats} ${cabin} on ${flightId}` }),
    crm: () => ({ notes: async () => ["prefers email"] }),
    limits: () => ({ approvalLimit: async () => 100 }),
    weather: () => async (city) => `It is sunny in ${city}.`,
    redis: () => ({
      get: async (key) => memory.get(key) ?? null,
      set: async (key, value) => memory.set(key, value),
    }),
    // A 1x1 PNG.
    drawSeatMap: () => () =>
      Buffer.from(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==",
        "base64",
      ),
    exportReport: () => async () => "report.csv",
    confirmInUi: () => async () => true,
    handle: () => async () => {},
    stopButton: () => ({ onclick: null }),
    spam: () => ({ isSpam: async () => false }),
    humans: () => ({ handOver: async () => {} }),
    currentUserId: () => async () => "u_docs",
    output: () => ({ textContent: "" }),
    showDialog: () => (_title, _reason, _allow, _decline, onAnswer) => onAnswer(true),
    closeDialog: () => () => {},
    askThePage: () => async () => "allowed",
    askServerToHold: () => async () => ({ accepted: true }),
    // A frame the sample relays must be one the server accepts.
    relay: () => (frame) => {
      const decoded = decodeFrame(JSON.stringify(frame), { channel: "client-to-server" });
      if (!decoded.ok)
        throw new Error(`relayed an invalid frame: ${decoded.error.message} (${JSON.stringify(frame)})`);
    },
    conversation: () => [],
    history: () => [],
    completion: () => ({
      choices: [
        {
          message: {
            role: "assistant",
            content: null,
            tool_calls: [
              {
                id: "call_1",
                type: "function",
                function: { name: "get_weather", arguments: '{"city":"Lisbon"}' },
              },
            ],
          },
        },
      ],
    }),
    dispatch: () => new Dispatch({ capacity: 1, url, apiKey, secret, logger: false }),
    db: () => {
      const db = new Database(":memory:");
      db.exec("CREATE TABLE refunds (id INTEGER PRIMARY KEY, call_id TEXT UNIQUE, order_id TEXT)");
      return db;
    },
  };
}

/** The test's follow-up after a sample ran (its marker's `run; ...`). */
async function follow(followUp, sample, owned, fixtureValues, tracked) {
  if (!followUp) return {};
  const call = /^call (\w+) (.*)$/.exec(followUp);
  if (call) {
    // The model calls the tool the sample registered. A worker the sample runs hosts it already;
    // otherwise the declared worker, or a new one, hosts the declared agent for the call.
    let dispatch;
    let running;
    if (!owned.sampleRunsWorker) {
      dispatch = fixtureValues.dispatch;
      if (!dispatch) {
        dispatch = new Dispatch({ capacity: 1, url, apiKey, secret, logger: false });
        dispatch.host(fixtureValues.agent);
      }
      owned.dispatches.push({ dispatch });
      running = dispatch.run();
      await withTimeout(
        new Promise((resolve) => dispatch.once("ready", resolve)),
        10_000,
        "the worker's ready",
      );
    }
    const session = await owned.client().agent("support").sessions.create({ userId: "u_docs" });
    session.on("approval", (request) => void session.decide(request.id, { allowed: true }));
    const reply = await withTimeout(session.responses.create(`run sample ${sample.id}`), 15_000, "the reply");
    const item = session.conversation.find((i) => i.type === "tool_call" && i.name === call[1]);
    if (dispatch) {
      await dispatch.stop({ timeoutMs: 2_000 });
      await running;
    }
    return { reply: reply.text, call: item && { status: item.status, result: item.result } };
  }
  const channel = /^channel message( answered)?$/.exec(followUp);
  if (channel) {
    // Posted as a telephony or SMS provider would; the sample's worker takes it.
    const text = `run sample ${sample.id}`;
    const response = await fetch(`${url}/v1/agents/support/inbound/messages`, {
      method: "POST",
      headers: { "x-api-key": apiKey, authorization: `Bearer ${secret}`, "content-type": "application/json" },
      body: JSON.stringify({ channel: { type: "sms", id: "+15550100" }, userId: "u_channel", text }),
    });
    const body = await response.json().catch(() => undefined);
    const finished = () =>
      tracked.dispatches.flatMap((e) => e.finished).find((e) => e.workId === body?.workId);
    for (let i = 0; i < 200 && !finished(); i += 1) await pause(50);
    const result = { inbound: response.status, body, finished: finished() };
    if (!channel[1]) return result;
    // The handler answered on the channel's own session: the message and the model's reply are in it.
    const client = owned.client();
    for (const { id } of await client.agent("support").sessions.list({ userId: "u_channel" })) {
      const { conversation } = await client.agent("support").sessions.get(id);
      const asked = conversation.findIndex(
        (item) => item.type === "message" && item.role === "user" && item.text === text,
      );
      const replied = conversation
        .slice(asked + 1)
        .some((item) => item.type === "message" && item.role === "assistant");
      if (asked >= 0 && replied) return { ...result, answered: true };
    }
    return { ...result, answered: false };
  }
  throw new Error(`unknown follow-up: ${followUp}`);
}

async function runOne(sample) {
  const tracked = { clients: [], dispatches: [], servers: [] };
  const owned = { clients: [], dispatches: [], client: undefined };
  globalThis.__sampleTracked = tracked;
  const logs = [];
  const errors = [];
  const onUnhandled = (error) => errors.push(`unhandled: ${error?.stack ?? error}`);
  process.on("unhandledRejection", onUnhandled);
  const log = console.log;
  console.log = (...args) =>
    logs.push(args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" "));
  const cwd = mkdtempSync(join(tmpdir(), "patchbay-sample-"));
  const env = { PATCHBAY_URL: url, PATCHBAY_API_KEY: apiKey, PATCHBAY_API_SECRET: secret };
  for (const [name, value] of Object.entries(env)) {
    if (sample.code.includes(name)) process.env[name] = value;
    else delete process.env[name];
  }
  process.chdir(cwd);
  const started = Date.now();
  let followed = {};
  try {
    const make = fixtures(owned);
    owned.client = make.client;
    const values = {};
    for (const name of sample.declared) {
      const earlier = exported.get(sample.id.split(":")[0])?.[name];
      if (earlier !== undefined) values[name] = earlier;
      else if (make[name]) values[name] = await make[name]();
      else throw new Error(`the sample declares ${name}, which the samples test does not provide`);
    }
    globalThis.__sampleFixtures = values;
    let settled = false;
    const module = import(sample.module).finally(() => {
      settled = true;
    });
    module.catch(() => {});
    // A worker sample runs until stopped: once every worker it started is ready, do the marker's
    // follow-up, then stop them, which must let the sample's `await dispatch.run()` return.
    const deadline = Date.now() + SAMPLE_TIMEOUT_MS;
    while (!settled && Date.now() < deadline) {
      const running = tracked.dispatches.filter((e) => e.running);
      if (running.length > 0 && running.every((e) => e.ready)) break;
      await pause(25);
    }
    if (!settled && tracked.dispatches.some((e) => e.running)) {
      owned.sampleRunsWorker = true;
      if (sample.followUp) followed = await follow(sample.followUp, sample, owned, values, tracked);
      for (const { dispatch } of tracked.dispatches) await dispatch.stop({ timeoutMs: 2_000 });
    } else if (sample.followUp) {
      await withTimeout(module, SAMPLE_TIMEOUT_MS, "the sample");
      followed = await follow(sample.followUp, sample, owned, values, tracked);
    }
    const namespace = await withTimeout(module, Math.max(1_000, deadline - Date.now()), "the sample");
    const file = sample.id.split(":")[0];
    exported.set(file, { ...exported.get(file), ...namespace });
  } catch (error) {
    errors.push(error?.stack ?? String(error));
  } finally {
    console.log = log;
    for (const { dispatch } of [...tracked.dispatches, ...owned.dispatches]) {
      await dispatch.stop({ timeoutMs: 1_000 }).catch(() => {});
    }
    for (const client of [...tracked.clients, ...owned.clients]) client.close();
    for (const server of tracked.servers) await server.close().catch(() => {});
    await pause(20);
    process.off("unhandledRejection", onUnhandled);
    process.chdir(tmpdir());
    rmSync(cwd, { recursive: true, force: true });
  }
  return { id: sample.id, ok: errors.length === 0, errors, logs, followed, ms: Date.now() - started };
}

for (const sample of manifest.samples) {
  const result = await runOne(sample);
  process.stdout.write(`SAMPLE_RESULT ${JSON.stringify(result)}\n`);
}
process.exit(0);
