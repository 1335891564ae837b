// `npm test`: starts the app on free ports with the scripted model and has one conversation
// through the client: the model calls get_weather, the worker runs it, the reply uses its result.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { Client } from "@patchbay/client";
import { type App, startApp } from "../src/app.js";
import { getWeather } from "../src/tools.js";

const dataDir = mkdtempSync(join(tmpdir(), "patchbay-app-test-"));
let app: App;

before(async () => {
  // No model keys: the scripted model's rules in agents/assistant.yaml answer.
  app = await startApp({ patchbayPort: 0, pagePort: 0, dataDir, env: {}, logLevel: "silent" });
});
after(async () => {
  await app?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

test("get_weather returns a forecast for the city", async () => {
  const result = (await getWeather.run({ city: "lisbon" }, new AbortController().signal, {} as never)) as {
    city: string;
    temperature_c: number;
  };
  assert.equal(result.city, "Lisbon");
  assert.equal(typeof result.temperature_c, "number");
});

test("one turn: the agent calls get_weather and answers with its result", async () => {
  const client = new Client({ baseUrl: app.patchbayUrl, apiKey: app.apiKey, secret: app.secret });
  try {
    const session = await client.agent("assistant").sessions.create({ userId: "test-user" });
    const reply = await session.responses.create("What's the weather in Lisbon?");
    assert.match(reply.text, /^In Lisbon it is \d+ °C and (sunny|cloudy|rainy)\.$/);
  } finally {
    client.close();
  }
});

test("the page is served with its script and a token endpoint", async () => {
  const html = await (await fetch(app.pageUrl)).text();
  assert.match(html, /<script type="module" src="\/page.js">/);
  const script = await fetch(`${app.pageUrl}/page.js`);
  assert.equal(script.status, 200);
  const token = (await (await fetch(`${app.pageUrl}/api/token`, { method: "POST" })).json()) as {
    token: string;
  };
  assert.equal(token.token.split(".").length, 3);
});
