import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type CreateServerOptions, createServer } from "../create-server";
import { ServerError } from "../errors";
import { createLogger } from "../observability/logger";
import { KNOWN_SERVER_OPTIONS } from "./server-options";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const agents = { support: { model: { provider: "scripted" as const, rules: [] } } };

async function refusal(options: Record<string, unknown>): Promise<ServerError> {
  const dataDir = mkdtempSync(join(tmpdir(), "patchbay-options-"));
  dirs.push(dataDir);
  const error = await createServer({
    port: 0,
    dataDir,
    apiKey: "k",
    secret: "s",
    agents,
    ...options,
  } as never).then(
    async (server) => {
      await server.close();
      throw new Error("createServer accepted the options");
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ServerError);
  return error as ServerError;
}

describe("createServer's options", () => {
  it("knows every option CreateServerOptions declares, so none is reported unknown", () => {
    // A key missing on either side is a compile error here (the record must be complete) or a
    // difference in the list below.
    const declared: Record<keyof CreateServerOptions, true> = {
      mode: true,
      port: true,
      host: true,
      dataDir: true,
      databaseUrl: true,
      store: true,
      configDir: true,
      agents: true,
      apiKey: true,
      secret: true,
      tools: true,
      createModel: true,
      env: true,
      logger: true,
      logLevel: true,
      clientSocket: true,
      limits: true,
      http: true,
      progressIntervalMs: true,
      shutdownGraceMs: true,
      idempotencyStore: true,
      dispatch: true,
      processMetrics: true,
      cors: true,
      connectors: true,
      connectorStartTimeoutMs: true,
      natsUrl: true,
      cluster: true,
    };
    expect([...KNOWN_SERVER_OPTIONS].sort()).toEqual(Object.keys(declared).sort());
  });

  it("refuses wrong options up front with the field path", async () => {
    const tools = await refusal({ tools: [{ name: "x", run: () => 1 }] });
    expect(tools.message).toBe(
      "createServer: tools: expected a Tools registry, got an array: const tools = new Tools(); tools.register(...) for each",
    );
    expect(tools.path).toBe("tools");
    expect((await refusal({ port: "8787" })).message).toMatch(/^createServer: port: /);
    expect((await refusal({ port: 70_000 })).path).toBe("port");
    expect((await refusal({ cors: { origins: "localhost" } })).path).toBe("cors.origins");
    expect((await refusal({ logger: console })).message).toBe(
      "createServer: logger: expected a logger with debug, info, warn, error and child",
    );
  });

  it("takes process.env as env", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "patchbay-options-"));
    dirs.push(dataDir);
    const server = await createServer({
      port: 0,
      dataDir,
      apiKey: "k",
      secret: "s",
      agents,
      env: process.env,
      logLevel: "silent",
    });
    await server.close();
    expect((await refusal({ env: "PATH=/bin" })).path).toBe("env");
  });

  it("names which credential is missing in production", async () => {
    const error = await refusal({ secret: undefined, env: {}, mode: "production" });
    expect(error.message).toBe(
      'createServer: missing secret (or PATCHBAY_API_SECRET); production needs both (in development, mode: "development", they are made up)',
    );
    expect(error.path).toBe("secret");
  });

  it("warns about an unknown option with the closest known name and still starts", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), "patchbay-options-"));
    dirs.push(dataDir);
    const lines: string[] = [];
    const logger = createLogger({ level: "warn", write: (line) => lines.push(line) });
    const server = await createServer({
      port: 0,
      dataDir,
      apiKey: "k",
      secret: "s",
      agents,
      logger,
      shutdownGraceMS: 5,
    } as never);
    await server.close();
    expect(lines.map((line) => JSON.parse(line).msg)).toContain(
      "createServer: unknown option 'shutdownGraceMS' (did you mean 'shutdownGraceMs'?); it is ignored",
    );
  });
});
