import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parse as parseYaml } from "yaml";
import { closeAllClients, userClient } from "./helpers/clients";
import { E2E_DIR, MCP_SERVERS } from "./helpers/mcp-servers";
import { startTestServer, type TestServer } from "./helpers/start-server";

// The catalog's recipes, as written in docs/connectors-catalog.md, run for real: the MCP servers
// through `npx -y` (found in this package's node_modules: they are its dev dependencies), the
// OpenAPI recipe against a local HTTP server. The only change to a recipe is `cwd`, so npx
// finds the installed packages instead of going to the registry.
const CATALOG = fileURLToPath(new URL("../../../docs/connectors-catalog.md", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "pb-catalog-"));
const filesDir = join(dir, "files");
let api: Server;
let apiUrl: string;
let server: TestServer | undefined;
const children: ChildProcess[] = [];

beforeAll(async () => {
  mkdirSync(filesDir);
  writeFileSync(join(filesDir, "notes.txt"), "Remember the milk.\n");
  const spec = {
    openapi: "3.0.3",
    info: { title: "Pets", version: "1" },
    servers: [{ url: "/v1" }],
    paths: {
      "/pets": { get: { operationId: "listPets", responses: { "200": { description: "ok" } } } },
      "/pets/{petId}": {
        get: {
          operationId: "showPet",
          parameters: [{ name: "petId", in: "path", required: true, schema: { type: "integer" } }],
          responses: { "200": { description: "ok" } },
        },
      },
    },
  };
  api = createServer((req, res) => {
    if (req.url === "/openapi.json")
      return void res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(spec));
    if (req.headers.authorization !== "Bearer pets-token") return void res.writeHead(401).end("no token");
    if (req.url === "/v1/pets")
      return void res.writeHead(200, { "content-type": "application/json" }).end('[{"id":1,"name":"Rex"}]');
    res.writeHead(404, { "content-type": "application/json" }).end('{"error":"no such pet"}');
  });
  await new Promise<void>((resolve) => api.listen(0, "127.0.0.1", resolve));
  apiUrl = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
});
afterEach(async () => {
  closeAllClients();
  await server?.close();
  server = undefined;
  for (const child of children.splice(0)) child.kill("SIGTERM");
});
afterAll(async () => {
  await new Promise<void>((resolve) => api.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

function catalogEntries(): Record<string, any>[] {
  const text = readFileSync(CATALOG, "utf8");
  const blocks = [...text.matchAll(/^```yaml\n([\s\S]*?)^```/gm)].map(
    (match) => parseYaml(match[1]!) as { connectors: Record<string, any>[] },
  );
  return blocks
    .flatMap((block) => block.connectors)
    .map((entry) =>
      entry.mcp?.command === "npx" ? { ...entry, mcp: { ...entry.mcp, cwd: E2E_DIR } } : entry,
    );
}

const RULES = [
  {
    match: "remember ada",
    toolCalls: [
      {
        tool: "memory__create_entities",
        arguments: { entities: [{ name: "Ada", entityType: "person", observations: ["likes tea"] }] },
      },
    ],
    reply: "Saved.",
  },
  { match: "what do you know", toolCalls: [{ tool: "memory__read_graph" }], reply: "Known: {result}" },
  {
    match: "list files",
    toolCalls: [{ tool: "files__list_directory", arguments: { path: filesDir } }],
    reply: "Files: {result}",
  },
  {
    match: "write a file",
    toolCalls: [{ tool: "files__write_file", arguments: { path: join(filesDir, "x"), content: "x" } }],
    reply: "Wrote.",
    errorReply: "Not written: {result}",
  },
  {
    match: "echo (?<text>.+)",
    toolCalls: [{ tool: "everything__echo", arguments: { message: "{text}" } }],
    reply: "{result}",
  },
  { match: "pets", toolCalls: [{ tool: "pets__listPets" }], reply: "Pets: {result}" },
];

describe("the connector catalog's recipes", () => {
  it("start as written and the scripted model calls a tool of each by its offered name", async () => {
    const entries = catalogEntries();
    expect(entries.map((entry) => entry.name)).toEqual(["memory", "files", "everything", "pets"]);
    // YAML is a superset of JSON: the agent file is written as JSON.
    const agent = {
      instructions: "Use the tools.",
      model: { provider: "scripted", fallback: "No rule.", rules: RULES },
      connectors: entries,
    };
    server = await startTestServer({
      agentFiles: { support: JSON.stringify(agent) },
      env: {
        MEMORY_FILE_PATH: join(dir, "memory.json"),
        FILES_DIR: filesDir,
        PETS_OPENAPI_URL: `${apiUrl}/openapi.json`,
        PETS_TOKEN: "pets-token",
        PATH: process.env.PATH,
      },
      connectorStartTimeoutMs: 30_000,
    });
    expect(
      server.server.connectors
        .get("support")!
        .status()
        .map((s) => [s.name, s.state, s.reason]),
    ).toEqual([
      ["memory", "up", undefined],
      ["files", "up", undefined],
      ["everything", "up", undefined],
      ["pets", "up", undefined],
    ]);
    const client = await userClient(server, "u_1");
    const session = await client.agent("support").sessions.create();
    expect((await session.responses.create("remember ada")).text).toBe("Saved.");
    expect((await session.responses.create("what do you know?")).text).toContain(
      '"observations":["likes tea"]',
    );
    expect((await session.responses.create("list files")).text).toBe('Files: {"content":"[FILE] notes.txt"}');
    expect((await session.responses.create("write a file")).text).toMatch(
      /^Not written: .*files__write_file/,
    );
    expect((await session.responses.create("echo catalog")).text).toBe("Echo: catalog");
    expect((await session.responses.create("pets")).text).toBe('Pets: [{"id":1,"name":"Rex"}]');
  }, 90_000);
});

describe("a connector hosted by a dispatch worker process", () => {
  it("offers the worker's connector tools to the server's agent, which calls them", async () => {
    const file = join(dir, "worker-connectors.yaml");
    writeFileSync(
      file,
      `connectors:\n  - name: memory\n    mcp:\n      command: "\${NODE_BIN}"\n      args: ["${MCP_SERVERS.memory}"]\n      env: { MEMORY_FILE_PATH: "\${WORKER_MEMORY}" }\n    approval: { tools: [] }\n`,
    );
    server = await startTestServer({
      agents: {
        support: {
          instructions: "Use the tools.",
          model: {
            provider: "scripted",
            fallback: "No rule.",
            rules: [
              {
                match: "remember bob",
                toolCalls: [
                  {
                    tool: "memory__create_entities",
                    arguments: {
                      entities: [{ name: "Bob", entityType: "person", observations: ["plays chess"] }],
                    },
                  },
                ],
                reply: "Saved.",
              },
              { match: "recall", toolCalls: [{ tool: "memory__read_graph" }], reply: "Known: {result}" },
            ],
          },
        } as never,
      },
    });
    const repo = fileURLToPath(new URL("../../..", import.meta.url));
    const tsx = pathToFileURL(createRequire(join(repo, "bench/package.json")).resolve("tsx")).href;
    const hooks = pathToFileURL(join(E2E_DIR, "fixtures", "dispatch-source-register.mjs")).href;
    const worker = spawn(
      process.execPath,
      ["--import", tsx, "--import", hooks, join(E2E_DIR, "fixtures", "connector-worker.ts")],
      {
        env: {
          ...process.env,
          PATCHBAY_URL: server.url,
          PATCHBAY_API_KEY: server.apiKey,
          PATCHBAY_API_SECRET: server.secret,
          CONNECTORS_FILE: file,
          NODE_BIN: process.execPath,
          WORKER_MEMORY: join(dir, "worker-memory.json"),
        },
        stdio: ["ignore", "pipe", "inherit"],
      },
    );
    children.push(worker);
    const lines: Record<string, unknown>[] = [];
    await new Promise<void>((resolve, reject) => {
      let buffered = "";
      worker.stdout!.on("data", (chunk: Buffer) => {
        buffered += String(chunk);
        const parts = buffered.split("\n");
        buffered = parts.pop() ?? "";
        for (const part of parts) {
          const line = JSON.parse(part) as Record<string, unknown>;
          lines.push(line);
          if (line.event === "ready") resolve();
        }
      });
      worker.once("exit", (code) => reject(new Error(`the worker exited ${code}`)));
    });
    expect(lines[0]).toMatchObject({ event: "connectors", status: [{ name: "memory", state: "up" }] });
    const client = await userClient(server, "u_1");
    const session = await client.agent("support").sessions.create();
    expect((await session.responses.create("remember bob")).text).toBe("Saved.");
    expect((await session.responses.create("recall")).text).toContain('"observations":["plays chess"]');
    const call = session.conversation.filter((item) => item.type === "tool_call").at(-1);
    expect(call).toMatchObject({ name: "memory__read_graph", location: "worker", status: "completed" });
  }, 60_000);
});
