// createServer's development defaults and production's refusals, on a real server on 127.0.0.1.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type CreateServerOptions, createServer, type PatchbayServer } from "../create-server";
import { ServerError } from "../errors";
import { createLogger } from "../observability/logger";
import { MemoryStore } from "../store/memory-store";
import { SqliteStore } from "../store/sqlite-store";
import { MIN_SECRET_BYTES, serverMode } from "./server-credentials";

const agents = { support: { model: { provider: "scripted" as const, rules: [] } } };
const servers: PatchbayServer[] = [];
const dirs: string[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

async function start(options: CreateServerOptions, lines: string[] = []): Promise<PatchbayServer> {
  const server = await createServer({
    port: 0,
    host: "127.0.0.1",
    agents,
    logger: createLogger({ level: "info", format: "json", write: (line) => lines.push(line) }),
    ...options,
  });
  servers.push(server);
  return server;
}

async function refusal(options: CreateServerOptions): Promise<ServerError> {
  const error = await start(options).then(
    () => new Error("createServer started"),
    (e: unknown) => e,
  );
  if (!(error instanceof ServerError)) throw error;
  return error;
}

const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "patchbay-credentials-"));
  dirs.push(dir);
  return dir;
};

describe("createServer() in development", () => {
  it("makes up the API key and secret, prints them once, and keeps sessions in memory", async () => {
    const lines: string[] = [];
    const server = await start({ mode: "development", env: {} }, lines);
    const { apiKey, secret } = server.credentials;
    expect(apiKey).toMatch(/^pk_dev_[0-9a-f]{12}$/);
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    expect(Buffer.byteLength(secret)).toBeGreaterThanOrEqual(MIN_SECRET_BYTES);
    const printed = lines.filter((line) => line.includes(secret));
    expect(printed).toHaveLength(1);
    expect(JSON.parse(printed[0]!)).toMatchObject({ level: "warn", apiKey, secret });
    expect(server.mode).toBe("development");
    expect(server.store).toBeInstanceOf(MemoryStore);
    // The made-up credentials are the ones the server checks.
    const headers = {
      "x-api-key": apiKey,
      authorization: `Bearer ${secret}`,
      "content-type": "application/json",
    };
    const created = await fetch(`${server.url}/v1/agents/support/sessions`, {
      method: "POST",
      headers,
      body: JSON.stringify({ userId: "u_1" }),
    });
    expect(created.status).toBe(201);
    const wrong = await fetch(`${server.url}/v1/agents/support/sessions`, {
      method: "POST",
      headers: { ...headers, authorization: "Bearer nope" },
      body: "{}",
    });
    expect(wrong.status).toBe(401);
  });

  it("keeps given credentials and a given dataDir, and only warns about a short secret", async () => {
    const lines: string[] = [];
    const dataDir = tempDir();
    const server = await start(
      { env: { NODE_ENV: "test" }, apiKey: "pk_mine", secret: "short", dataDir },
      lines,
    );
    expect(server.credentials).toEqual({ apiKey: "pk_mine", secret: "short" });
    expect(server.store).toBeInstanceOf(SqliteStore);
    expect(lines.some((line) => line.includes("the secret is 5 bytes"))).toBe(true);
    expect(lines.some((line) => line.includes("development credentials"))).toBe(false);
  });
});

describe("createServer() in production", () => {
  it("refuses missing credentials, a weak secret and no place for data, naming the field", async () => {
    const production = { mode: "production" as const, env: {} };
    expect(await refusal({ ...production, dataDir: tempDir() })).toMatchObject({
      code: "invalid_config",
      path: "apiKey",
    });
    const weak = await refusal({ ...production, apiKey: "pk_live", secret: "hunter2", dataDir: tempDir() });
    expect(weak).toMatchObject({ code: "invalid_config", path: "secret" });
    expect(weak.message).toBe(
      "createServer: secret: the secret is 7 bytes; production needs at least 32 (`openssl rand -hex 32` makes one)",
    );
    const secret = "x".repeat(MIN_SECRET_BYTES);
    expect((await refusal({ ...production, apiKey: "pk_live", secret })).message).toBe(
      "a place for data is required: dataDir (SQLite), databaseUrl (Postgres) or a store",
    );
    const server = await start({ ...production, apiKey: "pk_live", secret, dataDir: tempDir() });
    expect(server.mode).toBe("production");
  });

  it("is the mode NODE_ENV=production or PATCHBAY_MODE names, and a wrong mode is refused", async () => {
    expect(serverMode(undefined, { NODE_ENV: "production" })).toBe("production");
    expect(serverMode(undefined, { NODE_ENV: "production", PATCHBAY_MODE: "development" })).toBe(
      "development",
    );
    expect(serverMode("production", { PATCHBAY_MODE: "development" })).toBe("production");
    expect(serverMode(undefined, {})).toBe("development");
    expect(await refusal({ env: { NODE_ENV: "production" } })).toMatchObject({ path: "apiKey" });
    expect(await refusal({ env: { PATCHBAY_MODE: "staging" } })).toMatchObject({ path: "mode" });
  });
});
