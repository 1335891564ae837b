import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type CreateServerOptions, createServer, type PatchbayServer } from "../create-server";
import { silentLogger } from "../observability/logger";

/**
 * A server for this package's tests: 127.0.0.1, port 0, a temporary SQLite directory, API key
 * `pk_test` and secret `sk_test`, no logs, and one scripted agent `support` unless `options`
 * says otherwise. `close` stops it and removes the directory.
 */
export async function startServerForTest(
  options: Partial<CreateServerOptions> = {},
): Promise<{ server: PatchbayServer; close: () => Promise<void> }> {
  const dataDir = mkdtempSync(join(tmpdir(), "patchbay-server-test-"));
  const removeDataDir = () => rmSync(dataDir, { recursive: true, force: true });
  let server: PatchbayServer;
  try {
    server = await createServer({
      port: 0,
      host: "127.0.0.1",
      dataDir,
      apiKey: "pk_test",
      secret: "sk_test",
      logger: silentLogger,
      env: {},
      agents: { support: { model: { provider: "scripted", rules: [] } } },
      ...options,
    });
  } catch (error) {
    // A test of a refused start gets the error; the directory does not outlive it.
    removeDataDir();
    throw error;
  }
  return {
    server,
    close: async () => {
      await server.close();
      removeDataDir();
    },
  };
}
