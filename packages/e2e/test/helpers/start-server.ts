import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AgentFileInput, CreateServerOptions, PatchbayServer } from "@patchbay/server";
import { createServer, createUserToken, silentLogger } from "@patchbay/server";

/**
 * A real Patchbay server on 127.0.0.1 with a real SQLite file in a temp directory, for tests.
 * `restart()` stops it and starts a new process-equivalent on the same data directory (and the
 * same port when it is free), which is what a crash-free restart looks like.
 */
export interface TestServer {
  server: PatchbayServer;
  url: string;
  wsUrl: string;
  apiKey: string;
  secret: string;
  dataDir: string;
  configDir: string;
  /** A user token signed with the server's secret. */
  token(userId: string, expiresIn?: number | string): Promise<string>;
  /** Headers a backend sends. */
  backendHeaders(): Record<string, string>;
  restart(overrides?: Partial<CreateServerOptions>): Promise<PatchbayServer>;
  /** Stops the server and removes the temp directory. */
  close(): Promise<void>;
}

/** Options of {@link startTestServer}: createServer's, plus agent files to write. */
export interface TestServerOptions extends Partial<CreateServerOptions> {
  /** Agent files written under `<configDir>/agents/<name>.yaml` before start. */
  agentFiles?: Record<string, string>;
}

/**
 * Starts a server for a test. Fast timings by default (progress interval 20 ms, shutdown grace
 * 1 s) so the suite runs in seconds.
 */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const root = mkdtempSync(join(tmpdir(), "patchbay-e2e-"));
  const dataDir = join(root, "data");
  const configDir = join(root, "config");
  mkdirSync(join(configDir, "agents"), { recursive: true });
  for (const [name, text] of Object.entries(options.agentFiles ?? {})) {
    writeFileSync(join(configDir, "agents", `${name}.yaml`), text);
  }
  const apiKey = "pk_test_e2e";
  const secret = `secret-${Math.random().toString(36).slice(2)}-${Date.now()}`;
  const { agentFiles: _files, ...rest } = options;
  const base: CreateServerOptions = {
    port: 0,
    host: "127.0.0.1",
    dataDir,
    configDir,
    apiKey,
    secret,
    logger: silentLogger,
    progressIntervalMs: 20,
    shutdownGraceMs: 1_000,
    env: {},
    ...rest,
  };
  let server: PatchbayServer;
  try {
    server = await createServer(base);
  } catch (error) {
    // A test of a refused start gets the error; the directory does not outlive it.
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
  const handle: TestServer = {
    server,
    url: server.url,
    wsUrl: server.wsUrl,
    apiKey,
    secret,
    dataDir,
    configDir,
    token: (userId, expiresIn = "1h") => createUserToken(secret, userId, { expiresIn }),
    backendHeaders: () => ({
      "x-api-key": apiKey,
      authorization: `Bearer ${secret}`,
      "content-type": "application/json",
    }),
    async restart(overrides = {}) {
      const port = server.port;
      await server.close();
      server = await createServer({ ...base, port, ...overrides });
      handle.server = server;
      handle.url = server.url;
      handle.wsUrl = server.wsUrl;
      return server;
    },
    async close() {
      await server.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
  return handle;
}

/** An agent answered by the scripted model with these rules. */
export function scriptedAgent(
  rules: NonNullable<Extract<AgentFileInput["model"], { provider: "scripted" }>["rules"]>,
  extra: Partial<AgentFileInput> = {},
): AgentFileInput {
  return {
    instructions: "You are a test agent.",
    model: { provider: "scripted", rules, fallback: "I have no rule for that." },
    ...extra,
  } as AgentFileInput;
}
