// The peer: `lookup_order` served by the official MCP TypeScript SDK, the way its README shows,
// over stdio (`mcp-server stdio`, spawned by the SDK's stdio client) or Streamable HTTP
// (`mcp-server http`, stateful sessions, one McpServer per session as the SDK requires).
import "../quiet-warnings";
import { randomUUID } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { LOOKUP_ORDER, lookupOrderText } from "../lookup-order";

function mcpServer(): McpServer {
  const server = new McpServer({ name: "bench", version: "0.0.0" });
  server.registerTool(
    LOOKUP_ORDER.name,
    { description: LOOKUP_ORDER.description, inputSchema: LOOKUP_ORDER.parameters.shape },
    async ({ order_id }) => ({ content: [{ type: "text", text: lookupOrderText(order_id) }] }),
  );
  return server;
}

const mode = process.argv[2];
if (mode === "stdio") {
  // No IPC here: the parent is the SDK's stdio client. Exit when it closes our stdin.
  process.stdin.on("end", () => process.exit(0));
  await mcpServer().connect(new StdioServerTransport());
} else {
  const { failed, ready } = await import("./peer-runtime");
  const transports = new Map<string, StreamableHTTPServerTransport>();
  const http = createServer(async (req, res) => {
    try {
      const sessionId = req.headers["mcp-session-id"];
      const transport = typeof sessionId === "string" ? transports.get(sessionId) : undefined;
      if (!transport) {
        // Only an initialize request may open a session; read it to know.
        const chunks: Buffer[] = [];
        for await (const chunk of req) chunks.push(chunk as Buffer);
        const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString("utf8")) : undefined;
        if (req.method !== "POST" || !isInitializeRequest(body)) {
          res.writeHead(400).end("no session");
          return;
        }
        const fresh: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (id: string): void => {
            transports.set(id, fresh);
          },
        });
        fresh.onclose = () => {
          if (fresh.sessionId) transports.delete(fresh.sessionId);
        };
        await mcpServer().connect(fresh);
        await fresh.handleRequest(req, res, body);
        return;
      }
      await transport.handleRequest(req, res);
    } catch (error) {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(error));
    }
  });
  http.on("error", failed);
  http.listen(0, "127.0.0.1", () =>
    ready({ url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp` }),
  );
}
