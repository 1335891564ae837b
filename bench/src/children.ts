// Child processes of a bench run. Every child is registered here so it is killed however the
// run ends (normal exit, an error, Ctrl-C, the watchdog), and each peer exits by itself when
// its IPC channel to us closes, so nothing outlives the bench even after a SIGKILL of the parent.
import { type ChildProcess, fork } from "node:child_process";
import { fileURLToPath } from "node:url";

const live = new Set<ChildProcess>();

/** Kills every child still running (SIGKILL: a benchmark peer has nothing to flush). */
export function killAllChildren(): void {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
  live.clear();
}

let hooked = false;
function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.once("exit", killAllChildren);
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => {
      killAllChildren();
      process.exit(130);
    });
  }
}

export interface Peer<Ready> {
  child: ChildProcess;
  /** What the child sent with its `ready` message (a port, a URL). */
  ready: Ready;
  /** Sends a command to the child and resolves with its reply (`{ reply: id, ... }`). */
  request<T = unknown>(message: Record<string, unknown>, timeoutMs?: number): Promise<T>;
  /** Kills the child and waits until it is gone. */
  kill(): Promise<void>;
}

let nextRequest = 1;

/**
 * `BENCH_CPU_PROF=<dir>` profiles every peer (`node --cpu-prof`) into that directory; run the
 * bench itself with `node --cpu-prof --cpu-prof-dir=<dir>` to profile this process too.
 */
function profiling(): string[] {
  const dir = process.env.BENCH_CPU_PROF;
  return dir ? ["--cpu-prof", `--cpu-prof-dir=${dir}`] : [];
}

/**
 * Forks `src/peers/<name>.ts` under tsx and waits for its `{ type: "ready" }` message.
 * Extra `args` reach the child as argv; `execArgv` lets a scenario add `--expose-gc` and the like.
 */
export async function spawnPeer<Ready = Record<string, unknown>>(
  name: string,
  options: { args?: string[]; env?: Record<string, string>; execArgv?: string[]; timeoutMs?: number } = {},
): Promise<Peer<Ready>> {
  hookExit();
  const file = fileURLToPath(new URL(`./peers/${name}.ts`, import.meta.url));
  const child = fork(file, options.args ?? [], {
    execArgv: ["--import", "tsx", ...profiling(), ...(options.execArgv ?? [])],
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  live.add(child);
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  exited.then(() => live.delete(child));

  const ready = await new Promise<Ready>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`peer ${name} was not ready within ${options.timeoutMs ?? 20_000} ms`));
    }, options.timeoutMs ?? 20_000);
    const onMessage = (message: { type?: string; error?: string }) => {
      if (message?.type === "ready") {
        clearTimeout(timer);
        child.off("message", onMessage);
        resolve(message as Ready);
      } else if (message?.type === "failed") {
        clearTimeout(timer);
        reject(new Error(`peer ${name} failed to start: ${message.error}`));
      }
    };
    child.on("message", onMessage);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`peer ${name} exited before it was ready (code ${code}, signal ${signal})`));
    });
  });

  return {
    child,
    ready,
    request<T>(message: Record<string, unknown>, timeoutMs = 60_000) {
      const id = nextRequest++;
      return new Promise<T>((resolve, reject) => {
        const timer = setTimeout(() => {
          child.off("message", onReply);
          reject(new Error(`peer ${name} did not answer ${String(message.type)} within ${timeoutMs} ms`));
        }, timeoutMs);
        const onReply = (reply: { reply?: number; error?: string }) => {
          if (reply?.reply !== id) return;
          clearTimeout(timer);
          child.off("message", onReply);
          if (reply.error) reject(new Error(`peer ${name}: ${reply.error}`));
          else resolve(reply as T);
        };
        child.on("message", onReply);
        child.send({ ...message, id });
      });
    },
    async kill() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      // A moment to exit on its own (peer-runtime.ts): a profiled peer writes its profile, a
      // server removes its data directory (patchbay-server.ts). Then it is killed.
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 3_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Registers a process some library spawned (the MCP stdio transport), so it is killed with ours. */
export function trackPid(pid: number | null | undefined): () => void {
  if (!pid) return () => {};
  hookExit();
  const stub = {
    exitCode: null,
    signalCode: null,
    kill: (signal: NodeJS.Signals) => {
      try {
        process.kill(pid, signal);
      } catch {
        // already gone
      }
    },
  } as unknown as ChildProcess;
  live.add(stub);
  return () => live.delete(stub);
}
