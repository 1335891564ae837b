import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createModel, type LanguageModel, type ModelRequest } from "@patchbay/models";
import { createServer, silentLogger } from "@patchbay/server";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { closeAllClients, nextEvent, userClient } from "./helpers/clients";
import { freePort, MCP_SERVERS, MCP_TAP } from "./helpers/mcp-servers";
import { recording } from "./helpers/recording-model";
import { startTestServer, type TestServer } from "./helpers/start-server";

// End to end: the real server with the scripted model, the real client, and the real MCP
// servers published on npm (dev dependencies of this package), over stdio and Streamable HTTP.
const dir = mkdtempSync(join(tmpdir(), "pb-conn-e2e-"));
let server: TestServer | undefined;
const children: ChildProcess[] = [];
afterEach(async () => {
  closeAllClients();
  await server?.close();
  server = undefined;
  for (const child of children.splice(0)) child.kill();
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const RULES = `
model:
  provider: scripted
  fallback: "No rule."
  rules:
    - match: "echo (?<text>.+)"
      toolCalls: [{ tool: everything__echo, arguments: { message: "{text}" } }]
      reply: "Echoed: {result}"
      errorReply: "Echo failed: {result}"
    - match: "add (?<a>\\\\d+) and (?<b>\\\\d+)"
      toolCalls: [{ tool: everything__get-sum, arguments: { a: "{a:number}", b: "{b:number}" } }]
      reply: "Sum: {result}"
      errorReply: "No sum: {result}"
    - match: "picture"
      toolCalls: [{ tool: everything__get-tiny-image }]
      reply: "Picture: {result}"
    - match: "long"
      toolCalls: [{ tool: everything__trigger-long-running-operation, arguments: { duration: 4, steps: 8 } }]
      reply: "Long: {result}"
`;

function everythingAgent(mcp: string): string {
  return `instructions: Use the everything tools.
${RULES}
connectors:
  - name: everything
    mcp:
${mcp}
    tools: { allow: [echo, get-sum, get-tiny-image, trigger-long-running-operation] }
    approval: { tools: ["get-sum"], title: "Add {a} and {b}?" }
    timeout_ms: 30000
`;
}

/** Over stdio through the tap, which logs what the client sends and the server's pid. */
function stdioAgent(log: string, more = ""): string {
  return everythingAgent(`      command: \${NODE_BIN}
      args: ["${MCP_TAP}", "${log}", "\${NODE_BIN}", "${MCP_SERVERS.everything}", "stdio"]${more}`);
}

async function waitFor<T>(read: () => T | undefined | false, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = read();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const logOf = (file: string) => {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
};

// 60 s a test: each starts real MCP servers from npm (node processes), slow on a loaded 2-core machine.
describe("MCP connectors end to end (server-everything from npm)", { timeout: 60_000 }, () => {
  it("over stdio: results, approval, image, progress and an interrupt that reaches the server as a cancellation", async () => {
    const log = join(dir, "stdio.log");
    let model: (LanguageModel & { requests: ModelRequest[] }) | undefined;
    server = await startTestServer({
      agentFiles: { support: stdioAgent(log) },
      env: { NODE_BIN: process.execPath },
      createModel: (agent) => {
        model = recording(createModel(agent.model, {}));
        return model;
      },
    });
    const client = await userClient(server, "u_1");
    const session = await client.agent("support").sessions.create();

    expect((await session.responses.create("echo hello there")).text).toBe("Echoed: Echo: hello there");

    const asked = nextEvent(session, "approval");
    const sum = session.responses.create("add 2 and 40");
    const [request] = await asked;
    expect(request).toMatchObject({ tool: "everything__get-sum", title: "Add 2 and 40?" });
    await session.decide(request.id, { allowed: true });
    expect((await sum).text).toBe("Sum: The sum of 2 and 40 is 42.");

    const picture = await session.responses.create("show me a picture");
    expect(picture.text).toMatch(/^Picture: Here's the image you requested:/);
    const imageCall = session.conversation.filter((item) => item.type === "tool_call").at(-1);
    expect(imageCall?.type === "tool_call" && imageCall.result?.content.images).toEqual([
      expect.objectContaining({ type: "image", mimeType: "image/png" }),
    ]);
    // The model was handed the image with the tool's result.
    const toolMessage = model!.requests
      .at(-1)!
      .messages.filter((m) => m.role === "tool")
      .at(-1);
    expect(toolMessage).toMatchObject({
      isError: false,
      content: { images: [{ type: "image", mimeType: "image/png" }] },
    });

    const progressed = nextEvent(
      session,
      "toolCall",
      (item) => item.name === "everything__trigger-long-running-operation" && item.progress === "1 of 8",
    );
    const long = session.responses.create("do the long thing");
    await progressed;
    await session.interrupt();
    expect((await long).reason).toBe("interrupted");
    const longCall = session.conversation.filter((item) => item.type === "tool_call").at(-1);
    expect(longCall).toMatchObject({
      name: "everything__trigger-long-running-operation",
      status: "cancelled",
    });
    const cancelled = await waitFor(() =>
      logOf(log)
        .split("\n")
        .find((line) => line.includes('"notifications/cancelled"')),
    );
    expect(JSON.parse(cancelled.slice(2))).toMatchObject({
      method: "notifications/cancelled",
      params: { requestId: expect.anything() },
    });
  });

  it("restarts a crashed stdio server; meanwhile its tools say why and the server keeps serving", async () => {
    const log = join(dir, "crash.log");
    // A 2 s first backoff keeps the server down long enough to look at it meanwhile.
    server = await startTestServer({
      agentFiles: { support: stdioAgent(log, "\n      restart_backoff_ms: 2000") },
      env: { NODE_BIN: process.execPath },
    });
    const client = await userClient(server, "u_1");
    const session = await client.agent("support").sessions.create();
    expect((await session.responses.create("echo one")).text).toBe("Echoed: Echo: one");

    const pid = Number(/pid (\d+)/.exec(logOf(log))![1]);
    process.kill(pid, "SIGKILL");
    const down = await waitFor(() => {
      const status = server!.server.connectors.get("support")?.status()[0];
      return status?.state === "down" ? status : undefined;
    });
    expect(down.reason).toBe("the MCP server process exited");
    const readyz = await fetch(`${server.url}/readyz`);
    expect(readyz.status).toBe(200);
    expect(await readyz.json()).toMatchObject({
      status: "ready",
      connectors_down: [
        { agent: "support", name: "everything", state: "down", reason: "the MCP server process exited" },
      ],
    });
    expect((await session.responses.create("echo meanwhile")).text).toBe(
      "Echo failed: The everything service is unavailable right now (the MCP server process exited). Try again later.",
    );
    await waitFor(() => server!.server.connectors.get("support")?.status()[0]?.state === "up");
    expect((await session.responses.create("echo two")).text).toBe("Echoed: Echo: two");
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });

  it("over Streamable HTTP", async () => {
    const port = await freePort();
    const child = spawn(process.execPath, [MCP_SERVERS.everything, "streamableHttp"], {
      env: { ...process.env, PORT: String(port) },
      stdio: ["ignore", "ignore", "pipe"],
    });
    children.push(child);
    await new Promise<void>((resolve, reject) => {
      child.stderr!.on("data", (chunk: Buffer) => {
        if (String(chunk).includes("listening on port")) resolve();
      });
      child.once("exit", (code) => reject(new Error(`server-everything exited ${code}`)));
    });
    server = await startTestServer({
      agentFiles: { support: everythingAgent(`      url: http://127.0.0.1:${port}/mcp`) },
    });
    const client = await userClient(server, "u_1");
    const session = await client.agent("support").sessions.create();
    expect((await session.responses.create("echo over http")).text).toBe("Echoed: Echo: over http");
    const progressed = nextEvent(session, "toolCall", (item) => item.progress === "2 of 8");
    const long = session.responses.create("long one");
    await progressed;
    await session.interrupt();
    expect((await long).reason).toBe("interrupted");
  });

  it("a server that cannot listen stops the connectors it started (no child process left behind)", async () => {
    const log = join(dir, "listen.log");
    server = await startTestServer({ agents: {} });
    const configDir = join(dir, "listen-config");
    mkdirSync(join(configDir, "agents"), { recursive: true });
    writeFileSync(join(configDir, "agents", "support.yaml"), stdioAgent(log));
    await expect(
      createServer({
        port: server.server.port,
        dataDir: join(dir, "listen-data"),
        configDir,
        apiKey: "pk",
        secret: "a secret long enough",
        env: { NODE_BIN: process.execPath },
        logger: silentLogger,
      }),
    ).rejects.toThrow(/EADDRINUSE/);
    const pid = Number(/pid (\d+)/.exec(logOf(log))![1]);
    const alive = () => {
      try {
        process.kill(pid, 0);
        return true;
      } catch {
        return false;
      }
    };
    await waitFor(() => !alive(), 10_000);
  });

  it("a connector that cannot start does not stop the server: /readyz and its tools say which and why", async () => {
    server = await startTestServer({
      agentFiles: { support: everythingAgent(`      command: ${join(dir, "no-such-mcp-server")}`) },
    });
    const body = (await (await fetch(`${server.url}/readyz`)).json()) as Record<string, unknown>;
    expect(body).toMatchObject({
      status: "ready",
      connectors_down: [
        {
          agent: "support",
          name: "everything",
          kind: "mcp",
          state: "down",
          reason: expect.stringMatching(/^could not connect: .*ENOENT/),
        },
      ],
    });
    const client = await userClient(server, "u_1");
    const session = await client.agent("support").sessions.create();
    expect((await session.responses.create("echo anyone")).text).toMatch(
      /^Echo failed: The everything service is unavailable right now \(could not connect: .*ENOENT/,
    );
  });
});
