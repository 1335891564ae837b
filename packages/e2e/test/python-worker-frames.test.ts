import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Client } from "@patchbay/client";
import { createDispatch } from "@patchbay/server";
import { afterEach, describe, expect, it } from "vitest";
import { scriptedAgent, startTestServer, type TestServer } from "./helpers/start-server";

// A worker in Python written from docs/protocol.md, with the `websockets` default receive limit
// of 1 MiB (it declares none): a hosted.call whose conversation carries a 4 MB image is trimmed
// to fit instead of closing its socket (1009) and being delivered again and again.

const script = fileURLToPath(new URL("../fixtures/python-chart-worker.py", import.meta.url));
const rules = [
  {
    match: "^chart (?<bytes>\\d+)$",
    toolCalls: [{ tool: "chart", arguments: { bytes: "{bytes:integer}" } }],
    reply: "Here: {result}",
    errorReply: "Failed: {result}",
  },
];

interface PythonEvent {
  event: string;
  [field: string]: unknown;
}

let server: TestServer | undefined;
let python: ChildProcess | undefined;
let client: Client | undefined;
afterEach(async () => {
  client?.close();
  python?.kill("SIGKILL");
  await server?.close();
  server = client = python = undefined;
});

function startPython(url: string, apiKey: string, secret: string): PythonEvent[] {
  const events: PythonEvent[] = [];
  // Debian's interpreter, which has python3-websockets (a pyenv one first on PATH may not).
  python = spawn("/usr/bin/python3", [script], {
    env: { ...process.env, PATCHBAY_URL: url, PATCHBAY_API_KEY: apiKey, PATCHBAY_API_SECRET: secret },
    stdio: ["ignore", "pipe", "inherit"],
  });
  let buffered = "";
  python.stdout!.on("data", (chunk: Buffer) => {
    buffered += String(chunk);
    const lines = buffered.split("\n");
    buffered = lines.pop()!;
    for (const line of lines) if (line.trim()) events.push(JSON.parse(line) as PythonEvent);
  });
  return events;
}

async function until(events: PythonEvent[], event: string, count = 1): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (events.filter((e) => e.event === event).length < count) {
    if (Date.now() > deadline)
      throw new Error(`no '${event}' from the Python worker: ${JSON.stringify(events)}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("a Python worker with the websockets default of 1 MiB", () => {
  it("gets every hosted.call within 1 MiB, a large conversation trimmed, and no disconnect", async () => {
    server = await startTestServer({
      agents: { charts: scriptedAgent(rules) },
      dispatch: (context) => createDispatch(context),
    });
    const events = startPython(server.url, server.apiKey, server.secret);
    await until(events, "ready");
    expect(events[0]).toMatchObject({ maxFrameBytes: 5 * 1024 * 1024, maxResultFrameBytes: 8 * 1024 * 1024 });
    client = new Client({
      baseUrl: server.url,
      apiKey: server.apiKey,
      secret: server.secret,
      requestTimeoutMs: 10_000,
    });
    const session = await client.agent("charts").sessions.create({ userId: "u_1" });

    expect((await session.responses.create("chart 4000000")).text).toBe("Here: 1 chart(s) of 4000000 bytes");
    expect((await session.responses.create("chart 100")).text).toBe("Here: 1 chart(s) of 100 bytes");

    const calls = events.filter((e) => e.event === "call");
    expect(calls.map((c) => [c.attempt, c.trimmed])).toEqual([
      [1, false],
      [1, true],
    ]);
    for (const call of calls) expect(call.size as number).toBeLessThanOrEqual(1024 * 1024);
    expect(events.filter((e) => e.event === "disconnected" || e.event === "ready")).toHaveLength(1);
  });
});
