// A real Patchbay server on 127.0.0.1 (SQLite in a temp directory, the offline scripted model)
// for the hook and component tests, and a client acting for one user with a real user token.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@patchbay/client";
import { createServer, createUserToken, type PatchbayServer, silentLogger } from "@patchbay/server";

export const AGENT_YAML = `
name: Test assistant
instructions: Help.
mode: text
max_tool_rounds: 3
page_tool_timeout_ms: 20000
model:
  provider: scripted
  delayMs: 20
  rules:
    - match: "where am i"
      toolCalls:
        - tool: get_location
          arguments: { reason: "to tell you where you are" }
      reply: "You are at {results.get_location.place}."
      errorReply: "I did not get your location."
    - match: "search"
      toolCalls:
        - tool: slow_search
          arguments: { query: "cafés" }
      reply: "Found {results.slow_search.count} places."
      errorReply: "The search stopped."
    - match: "long story"
      reply: "Once upon a time there was a very long story that went on and on and on and on and on and on and on and on and on and on and on."
  fallback: "Hello from the test assistant."
`;

/** A second agent, for a component that switches agents. */
export const OTHER_AGENT_YAML = `
name: Other assistant
instructions: Help.
mode: text
model:
  provider: scripted
  delayMs: 20
  rules: []
  fallback: "Hello from the other assistant."
`;

export interface TestStack {
  server: PatchbayServer;
  client: Client;
  backend: Client;
  close(): Promise<void>;
}

export async function startStack(
  userId = "user_1",
  options: { port?: number; secret?: string } = {},
): Promise<TestStack> {
  const root = mkdtempSync(join(tmpdir(), "patchbay-react-"));
  mkdirSync(join(root, "config", "agents"), { recursive: true });
  writeFileSync(join(root, "config", "agents", "assistant.yaml"), AGENT_YAML);
  writeFileSync(join(root, "config", "agents", "other.yaml"), OTHER_AGENT_YAML);
  const apiKey = "pk_test_react";
  const secret = options.secret ?? `secret-${Math.random().toString(36).slice(2)}`;
  const server = await createServer({
    port: options.port ?? 0,
    host: "127.0.0.1",
    dataDir: join(root, "data"),
    configDir: join(root, "config"),
    apiKey,
    secret,
    logger: silentLogger,
    progressIntervalMs: 20,
    shutdownGraceMs: 500,
    env: {},
  });
  const client = new Client({ baseUrl: server.url });
  client.setUser({ id: userId }, await createUserToken(secret, userId, { expiresIn: "1h" }));
  const backend = new Client({ baseUrl: server.url, apiKey, secret });
  return {
    server,
    client,
    backend,
    async close() {
      client.close();
      backend.close();
      await server.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
