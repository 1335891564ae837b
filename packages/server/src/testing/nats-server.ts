// Tests' own NATS: a nats-server from Debian's nats-server package on 127.0.0.1, on a port the
// server picks itself (`-p -1`, read from its log in a throwaway directory), or the server
// named by PATCHBAY_TEST_NATS_URL when that is set (then callers share it; subjects they use carry
// a unique prefix).
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TestNats {
  /** `nats://127.0.0.1:<port>`. */
  url: string;
  /** Stops the server abruptly (SIGKILL), as a crashed NATS would go; `restart` brings it back. */
  kill(): Promise<void>;
  /** Starts it again on the same port (after `kill`). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

const CANDIDATES = ["/usr/sbin/nats-server", "/usr/bin/nats-server", "/usr/local/bin/nats-server"];

function binary(): string {
  const found = CANDIDATES.find((path) => existsSync(path));
  if (!found) {
    throw new Error(
      "these tests need NATS: install Debian's nats-server package (apt-get install nats-server), " +
        "or set PATCHBAY_TEST_NATS_URL to a server they may use",
    );
  }
  return found;
}

async function waitForPort(dir: string, child: ChildProcess): Promise<number> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      const log = existsSync(join(dir, "nats.log")) ? readFileSync(join(dir, "nats.log"), "utf8") : "";
      throw new Error(`nats-server exited with ${child.exitCode} before it was ready: ${log.slice(-500)}`);
    }
    const log = existsSync(join(dir, "nats.log")) ? readFileSync(join(dir, "nats.log"), "utf8") : "";
    const listening = /Listening for client connections on 127\.0\.0\.1:(\d+)[\s\S]*Server is ready/.exec(
      log,
    );
    if (listening) return Number(listening[1]);
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`nats-server in ${dir} was not ready within 10 s`);
}

function launch(dir: string, port: number, options: TestNatsOptions): ChildProcess {
  const args = ["-a", "127.0.0.1", "-p", String(port), "-l", join(dir, "nats.log"), ...(options.args ?? [])];
  return spawn(binary(), args, {
    stdio: "ignore",
    ...(options.maxProcs ? { env: { ...process.env, GOMAXPROCS: String(options.maxProcs) } } : {}),
  });
}

/** Options of {@link startTestNats}. */
export interface TestNatsOptions {
  /**
   * The server's `GOMAXPROCS` (default: Go's, one per core). The bench gives it 1 on a machine
   * whose cores it shares with the nodes, as one would size it for a container of one CPU.
   */
  maxProcs?: number;
  /**
   * More arguments for nats-server, as `["--user", "u", "--pass", "p"]`. A server started with
   * them is always the test's own, even when PATCHBAY_TEST_NATS_URL names one to share.
   */
  args?: string[];
}

async function killChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill(signal);
  await Promise.race([exited, new Promise((r) => setTimeout(r, 5_000))]);
  if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
}

/** Starts (or borrows) a NATS server on 127.0.0.1. */
export async function startTestNats(options: TestNatsOptions = {}): Promise<TestNats> {
  const shared = process.env.PATCHBAY_TEST_NATS_URL;
  if (shared && !options.args) {
    const nothing = async () => {};
    return { url: shared, kill: nothing, restart: nothing, stop: nothing };
  }
  const dir = mkdtempSync(join(tmpdir(), "patchbay-nats-"));
  let child = launch(dir, -1, options);
  const port = await waitForPort(dir, child).catch(async (error: unknown) => {
    await killChild(child, "SIGKILL");
    rmSync(dir, { recursive: true, force: true });
    throw error;
  });
  return {
    url: `nats://127.0.0.1:${port}`,
    kill: () => killChild(child, "SIGKILL"),
    restart: async () => {
      rmSync(join(dir, "nats.log"), { force: true });
      child = launch(dir, port, options);
      await waitForPort(dir, child);
    },
    stop: async () => {
      await killChild(child, "SIGTERM");
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
