// One scenario's world: a real Patchbay server (scripted model, SQLite in a temporary directory,
// the dispatch module with short heartbeats), the proxy in front of its worker socket, session
// clients, and the worker processes the scenario starts from the command under test.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, createUserToken, type Session } from "@patchbay/client";
import {
  type AgentFileInput,
  createDispatch,
  createServer,
  type DispatchModule,
  type PatchbayServer,
  silentLogger,
} from "@patchbay/server";
import { WorkerProxy, waitFor } from "./worker-proxy";

export const API_KEY = "pk_conformance";
export const SECRET = "sk_conformance_secret_of_at_least_32_bytes";
/** The server's heartbeat interval in the kit: short, so silence is noticed within a scenario. */
export const HEARTBEAT_MS = 400;
/** The agent whose tools the worker under test hosts. */
export const TOOLS_AGENT = "conformance";
/** The agent whose text goes to the worker first (`dispatch.text` enabled). */
export const DESK_AGENT = "conformance-desk";

const rule = (match: string, tool: string, args: Record<string, unknown> = {}) => ({
  match,
  toolCalls: [{ tool, arguments: args }],
  reply: "done: {result}",
  errorReply: "failed: {result}",
});

/** The scripted model's rules: each user message names the tool call it makes. */
export const KIT_AGENTS: Record<string, AgentFileInput> = {
  [TOOLS_AGENT]: {
    model: {
      provider: "scripted",
      rules: [
        rule("^echo-missing$", "echo"),
        rule("^echo (?<text>.+)$", "echo", { text: "{text}" }),
        rule("^describe$", "describe_call"),
        rule("^report (?<steps>\\d+)$", "report", { steps: "{steps:integer}" }),
        rule("^wait (?<ms>\\d+)$", "wait", { ms: "{ms:integer}" }),
        rule("^hold (?<ms>\\d+)$", "hold_then_wait", { ms: "{ms:integer}" }),
        rule("^sleepy$", "sleepy"),
        rule("^fail$", "fail"),
        rule("^image$", "image"),
        rule("^recall (?<n>\\d+)$", "recall", { n: "{n:integer}" }),
        rule("^pay (?<amount>\\d+)$", "pay", { amount: "{amount:integer}" }),
      ],
    },
    max_tool_rounds: 2,
  },
  [DESK_AGENT]: {
    model: { provider: "scripted", rules: [{ match: ".", reply: "the model answered" }] },
    dispatch: { text: "enabled", incoming_call: "enabled" },
  },
};

/** How a scenario starts a worker from the command under test. */
export interface WorkerStart {
  workerId: string;
  capacity?: number;
  secret?: string;
}

/** A worker process started from the command under test. */
export class WorkerUnderTest {
  readonly exited: Promise<number | null>;
  output = "";
  #child: ChildProcess;

  constructor(command: string[], env: Record<string, string>) {
    const [file, ...args] = command;
    this.#child = spawn(file!, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    const keep = (chunk: Buffer) => {
      this.output = (this.output + String(chunk)).slice(-8_000);
    };
    this.#child.stdout!.on("data", keep);
    this.#child.stderr!.on("data", keep);
    this.exited = new Promise((resolve) => {
      this.#child.once("exit", (code, signal) => resolve(signal ? null : code));
      this.#child.once("error", (error) => {
        this.output += `\ncould not start ${file}: ${error.message}`;
        resolve(127);
      });
    });
  }

  get running(): boolean {
    return this.#child.exitCode === null && this.#child.signalCode === null;
  }

  signal(signal: NodeJS.Signals): void {
    if (this.running) this.#child.kill(signal);
  }

  /** The exit code within `timeoutMs`, or an error. */
  async exitCode(timeoutMs: number): Promise<number | null> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the worker did not exit within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([this.exited, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** Everything a scenario works with. */
export interface KitWorld {
  server: PatchbayServer;
  dispatch: DispatchModule;
  proxy: WorkerProxy;
  workers: WorkerUnderTest[];
  /** Starts a worker process (it connects through the proxy). */
  startWorker(start: WorkerStart): WorkerUnderTest;
  /** Starts a worker and waits until the server holds its socket. Returns the socket's index. */
  startReadyWorker(start: WorkerStart): Promise<{ worker: WorkerUnderTest; connection: number }>;
  /**
   * A new session of `agent`, through a backend client, or as the user with a user token (a
   * user's messages go to a worker first when the agent has `dispatch.text` enabled).
   */
  session(agent?: string, as?: "backend" | "user"): Promise<Session>;
  post(path: string, body: unknown): Promise<{ status: number; body: unknown }>;
  close(): Promise<void>;
}

/** Starts the server and the proxy for one scenario. */
export async function startWorld(command: string[], heartbeatMs = HEARTBEAT_MS): Promise<KitWorld> {
  const dir = mkdtempSync(join(tmpdir(), "patchbay-conformance-"));
  let dispatch!: DispatchModule;
  const server = await createServer({
    port: 0,
    host: "127.0.0.1",
    dataDir: join(dir, "server"),
    apiKey: API_KEY,
    secret: SECRET,
    logger: silentLogger,
    agents: KIT_AGENTS,
    dispatch: (context) => {
      dispatch = createDispatch(context, { heartbeatIntervalMs: heartbeatMs, queueTimeoutMs: 10_000 });
      return dispatch;
    },
  });
  const proxy = await WorkerProxy.start(server.url);
  const workers: WorkerUnderTest[] = [];
  const clients: Client[] = [];
  const startWorker = (start: WorkerStart) => {
    const worker = new WorkerUnderTest(command, {
      PATCHBAY_URL: proxy.url,
      PATCHBAY_API_KEY: API_KEY,
      PATCHBAY_API_SECRET: start.secret ?? SECRET,
      PATCHBAY_WORKER_ID: start.workerId,
      PATCHBAY_CAPACITY: String(start.capacity ?? 4),
    });
    workers.push(worker);
    return worker;
  };
  return {
    server,
    dispatch,
    proxy,
    workers,
    startWorker,
    async startReadyWorker(start) {
      const before = proxy.connections.length;
      const worker = startWorker(start);
      const connection = await proxy.connection(before, 15_000).catch((error: Error) => {
        throw new Error(`${error.message}; worker output: ${worker.output.slice(-1_500)}`);
      });
      await waitFor(
        () => (dispatch.registry.get(start.workerId) ? true : undefined),
        () => undefined,
        5_000,
        () => `the server never took worker ${start.workerId}: it sent ${connection.types()}`,
      );
      return { worker, connection: connection.index };
    },
    async session(agent = TOOLS_AGENT, as = "backend") {
      if (as === "user") {
        const client = new Client({ baseUrl: server.url, requestTimeoutMs: 10_000 });
        clients.push(client);
        client.setUser({ id: "u_conformance" }, await createUserToken(SECRET, "u_conformance"));
        return client.agent(agent).sessions.create();
      }
      const client = new Client({
        baseUrl: server.url,
        apiKey: API_KEY,
        secret: SECRET,
        requestTimeoutMs: 10_000,
      });
      clients.push(client);
      return client.agent(agent).sessions.create({ userId: "u_conformance" });
    },
    async post(path, body) {
      const res = await fetch(`${server.url}${path}`, {
        method: "POST",
        headers: {
          "x-api-key": API_KEY,
          authorization: `Bearer ${SECRET}`,
          "content-type": "application/json",
        },
        body: JSON.stringify(body),
      });
      return { status: res.status, body: await res.json().catch(() => null) };
    },
    async close() {
      for (const client of clients) client.close();
      for (const worker of workers) worker.signal("SIGKILL");
      await Promise.all(workers.map((w) => w.exited));
      await proxy.close();
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
