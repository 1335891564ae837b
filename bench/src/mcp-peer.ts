// The peer scenario: the same `lookup_order` served by the official MCP TypeScript SDK, client
// here and server in a child process, over stdio and over Streamable HTTP.
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { spawnPeer, trackPid } from "./children";
import { LOOKUP_ORDER, ORDER_ARGS } from "./lookup-order";
import { compareLatency, compareThroughput, type Rig, warmUp } from "./measure";
import { LATENCY_MEASURE, latencyRow, type Scenario, throughputMeasure, throughputRow } from "./scenario";

function rig(name: string, client: Client, close: () => Promise<void>): Rig {
  return {
    name,
    async call() {
      const result = await client.callTool({ name: LOOKUP_ORDER.name, arguments: { ...ORDER_ARGS } });
      if (result.isError) throw new Error(`${name}: lookup_order failed`);
    },
    close,
  };
}

/**
 * A client learns the server's tools before it calls one (`tools/list`), as every MCP client and
 * the MCP connector do. It is not only realistic: V8 runs the SDK's result parsing differently
 * once a `tools/list` result went through it (about 2.6 KB more garbage per `tools/call` on this
 * Node), so a baseline that skipped it would measure a client nobody runs.
 */
async function listTools(client: Client): Promise<void> {
  const { tools } = await client.listTools();
  if (!tools.some((tool) => tool.name === LOOKUP_ORDER.name))
    throw new Error("the peer does not list lookup_order");
}

/** The SDK's client connected over stdio to the peer it spawns as its child, tools listed. */
export async function connectMcpStdio(): Promise<{ client: Client; close(): Promise<void> }> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ["--import", "tsx", fileURLToPath(new URL("./peers/mcp-server.ts", import.meta.url)), "stdio"],
    cwd: fileURLToPath(new URL("..", import.meta.url)),
    stderr: "inherit",
  });
  const client = new Client({ name: "bench", version: "0.0.0" });
  await client.connect(transport);
  const untrack = trackPid(transport.pid);
  await listTools(client);
  return {
    client,
    async close() {
      await client.close();
      untrack();
    },
  };
}

/** MCP over stdio: the SDK's client spawns the server as its child. */
export async function startMcpStdio(): Promise<Rig> {
  const { client, close } = await connectMcpStdio();
  return rig("MCP stdio", client, close);
}

/** MCP over Streamable HTTP on 127.0.0.1, one session. */
export async function startMcpHttp(): Promise<Rig> {
  const peer = await spawnPeer<{ url: string }>("mcp-server", { args: ["http"] });
  const client = new Client({ name: "bench", version: "0.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(peer.ready.url)));
  await listTools(client);
  return rig("MCP HTTP", client, async () => {
    await client.close().catch(() => {});
    await peer.kill();
  });
}

/** Scenario 3: the peer over stdio and over Streamable HTTP, each against the raw floor. */
export function mcpScenario(transport: "stdio" | "http"): Scenario {
  const id = transport === "stdio" ? "3 peer: MCP SDK stdio" : "3 peer: MCP SDK Streamable HTTP";
  return {
    id,
    measures: (budget) => [LATENCY_MEASURE, throughputMeasure(budget.inFlight)],
    async run({ budget, floor }) {
      const mcp = transport === "stdio" ? await startMcpStdio() : await startMcpHttp();
      try {
        await warmUp(mcp, budget);
        const latency = await compareLatency(mcp, floor, budget);
        const throughput = await compareThroughput(mcp, floor, budget);
        return [
          latencyRow(id, latency, floor.name),
          throughputRow(id, throughput, floor.name, { measure: throughputMeasure(budget.inFlight) }),
        ];
      } finally {
        await mcp.close();
      }
    },
  };
}
