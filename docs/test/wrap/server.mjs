// What a sample imports as @patchbay/server when the samples test runs it: the built package. A
// server the sample starts listens on 127.0.0.1 port 0 whatever port it names (tests share the
// machine), and an absolute data or config directory (/var/lib/patchbay) is taken below the
// sample's own working directory. Each server is closed after the sample.
import { join } from "node:path";
import * as real from "@patchbay/server";

export * from "@patchbay/server";

const local = (dir) => (typeof dir === "string" && dir.startsWith("/") ? join(process.cwd(), dir) : dir);

export async function createServer(options = {}) {
  const server = await real.createServer({
    ...options,
    host: "127.0.0.1",
    port: 0,
    dataDir: local(options.dataDir),
    configDir: local(options.configDir),
    logger: real.silentLogger,
  });
  globalThis.__sampleTracked?.servers.push(server);
  return server;
}
