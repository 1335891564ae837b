import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach } from "vitest";

/** The `patchbay` bin as installed, which runs the built CLI (tests run after `pnpm build`, as CI does). */
export const CLI_PATH = fileURLToPath(new URL("../../../server/bin/patchbay.js", import.meta.url));
const BUILT_CLI = fileURLToPath(new URL("../../../server/dist/cli.js", import.meta.url));

/** A `patchbay serve` child process and the URL it printed. */
export interface CliServer {
  child: ChildProcess;
  url: string;
  wsUrl: string;
  stderr: () => string;
  stdout: () => string;
  /** Resolves with the exit code (or the signal) when the process ends. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs `patchbay <args>` and resolves once it printed its URL. */
export async function startCli(args: string[], env: Record<string, string>): Promise<CliServer> {
  if (!existsSync(BUILT_CLI)) throw new Error(`${BUILT_CLI} is missing: run pnpm build first`);
  const child = spawn(process.execPath, [CLI_PATH, ...args], {
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stderr?.on("data", (chunk) => {
    stderr += String(chunk);
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve({ code, signal })),
  );
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`patchbay did not start: ${stderr}`)), 30_000);
    child.stdout?.on("data", (chunk) => {
      stdout += String(chunk);
      const match = /listening on (http:\/\/\S+)/.exec(stdout);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
    void exited.then(({ code }) => {
      clearTimeout(timer);
      reject(new Error(`patchbay exited with ${code} before listening: ${stderr}`));
    });
  });
  return {
    child,
    url,
    wsUrl: `${url.replace(/^http/, "ws")}/v1/client`,
    stderr: () => stderr,
    stdout: () => stdout,
    exited,
  };
}

/** Runs `patchbay <args>` to its end and resolves with its exit code and output. */
export function runCli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [CLI_PATH, ...args], {
    env: { PATH: process.env.PATH ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk) => {
    stdout += String(chunk);
  });
  child.stderr?.on("data", (chunk) => {
    stderr += String(chunk);
  });
  return new Promise((resolve) => child.on("exit", (code) => resolve({ code, stdout, stderr })));
}

/** The API secret of every {@link cliWorkspaces} workspace (user tokens are signed with it). */
export const CLI_SECRET = "cli-test-secret-value-of-at-least-32-bytes";

/** A temporary `patchbay serve` home: its root, the environment that points the CLI at it, the API secret. */
export interface CliWorkspace {
  root: string;
  env: Record<string, string> & {
    PATCHBAY_API_KEY: string;
    PATCHBAY_DATA_DIR: string;
    PATCHBAY_CONFIG_DIR: string;
  };
  secret: string;
}

/**
 * Workspaces for `patchbay serve` (config/agents/support.yaml, a data dir, an API key and
 * secret) and the CLI processes started in them. Called at the top of a test file: after each
 * test its processes are killed (SIGKILL if still running) and its workspaces removed.
 */
export function cliWorkspaces(prefix: string) {
  const roots: string[] = [];
  const children: CliServer[] = [];
  afterEach(async () => {
    for (const cli of children.splice(0)) {
      if (cli.child.exitCode === null && cli.child.signalCode === null) cli.child.kill("SIGKILL");
      await cli.exited;
    }
    for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
  });
  return {
    /** A workspace serving `agentYaml` as the agent `agent` (`support` unless named); `extraEnv` adds or overrides variables. */
    workspace(agentYaml: string, extraEnv: Record<string, string> = {}, agent = "support"): CliWorkspace {
      const root = mkdtempSync(join(tmpdir(), prefix));
      roots.push(root);
      mkdirSync(join(root, "config", "agents"), { recursive: true });
      writeFileSync(join(root, "config", "agents", `${agent}.yaml`), agentYaml);
      const secret = CLI_SECRET;
      const env = {
        PATCHBAY_API_KEY: "pk_cli",
        PATCHBAY_API_SECRET: secret,
        PATCHBAY_DATA_DIR: join(root, "data"),
        PATCHBAY_CONFIG_DIR: join(root, "config"),
        PATCHBAY_PORT: "0",
        PATCHBAY_LOG_LEVEL: "warn",
        ...extraEnv,
      };
      return { root, env, secret };
    },
    /** {@link startCli}, its process ended after the test. */
    async start(args: string[], env: Record<string, string>): Promise<CliServer> {
      const cli = await startCli(args, env);
      children.push(cli);
      return cli;
    },
  };
}

/**
 * The environment of one `patchbay serve` node of a test cluster: its workspace under `root`
 * (`config/` with the agents, `data/`), the shared PostgreSQL and NATS, and the lease TTL.
 */
export function clusterNodeEnv(options: {
  root: string;
  apiKey: string;
  secret: string;
  databaseUrl: string;
  natsUrl: string;
  leaseTtlMs: number;
}): Record<string, string> {
  return {
    PATCHBAY_API_KEY: options.apiKey,
    PATCHBAY_API_SECRET: options.secret,
    PATCHBAY_DATA_DIR: join(options.root, "data"),
    PATCHBAY_CONFIG_DIR: join(options.root, "config"),
    PATCHBAY_PORT: "0",
    PATCHBAY_LOG_LEVEL: "error",
    PATCHBAY_DATABASE_URL: options.databaseUrl,
    PATCHBAY_NATS_URL: options.natsUrl,
    PATCHBAY_LEASE_TTL_MS: String(options.leaseTtlMs),
  };
}
