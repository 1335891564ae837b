import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

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
