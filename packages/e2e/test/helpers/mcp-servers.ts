import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

/** The e2e package's directory: the MCP servers from npm are its dev dependencies. */
export const E2E_DIR = fileURLToPath(new URL("../..", import.meta.url));
/** The entry scripts of the third-party MCP servers installed from npm. */
export const MCP_SERVERS = {
  everything: fileURLToPath(
    new URL("../../node_modules/@modelcontextprotocol/server-everything/dist/index.js", import.meta.url),
  ),
  memory: fileURLToPath(
    new URL("../../node_modules/@modelcontextprotocol/server-memory/dist/index.js", import.meta.url),
  ),
  filesystem: fileURLToPath(
    new URL("../../node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", import.meta.url),
  ),
};
export const MCP_TAP = fileURLToPath(new URL("./mcp-tap.mjs", import.meta.url));

/** A port free on 127.0.0.1 now (for a server that takes its port from PORT and cannot report port 0). */
export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
