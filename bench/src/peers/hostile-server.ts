// The server of the attack scenario (8), in a process of its own, configured as `patchbay serve`
// configures it (default limits and quotas, process metrics, error-level logs to stderr) with
// the chaos suite's agent. Answers `memory` (heap and RSS as they are: no forced collection).
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLogger, createServer } from "@patchbay/server";
import { CHAOS_AGENT_YAML } from "../../../packages/e2e/fixtures/chaos-inputs";
import { HOSTILE_API_KEY, HOSTILE_SECRET } from "../hostile-agent";
import { failed, onRequest, ready } from "./peer-runtime";

try {
  const root = mkdtempSync(join(process.env.BENCH_DATA_ROOT ?? tmpdir(), "patchbay-bench-hostile-"));
  mkdirSync(join(root, "config", "agents"), { recursive: true });
  writeFileSync(join(root, "config", "agents", "chaos.yaml"), CHAOS_AGENT_YAML);
  const server = await createServer({
    port: 0,
    host: "127.0.0.1",
    dataDir: join(root, "data"),
    configDir: join(root, "config"),
    apiKey: HOSTILE_API_KEY,
    secret: HOSTILE_SECRET,
    logger: createLogger({ level: "error" }),
    processMetrics: true,
  });
  onRequest(async (message) => {
    if (message.type === "memory") {
      const usage = process.memoryUsage();
      return { rss: usage.rss, heapUsed: usage.heapUsed, external: usage.external };
    }
    throw new Error(`unknown request ${String(message.type)}`);
  });
  const stop = async () => {
    await server.close().catch(() => {});
    rmSync(root, { recursive: true, force: true });
  };
  process.on("disconnect", () => void stop());
  ready({ url: `${server.url.replace(/^http/, "ws")}/v1/client` });
} catch (error) {
  failed(error);
}
