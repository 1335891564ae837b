// Progress lines for the long first-run steps of scripts/run.mjs (installing, building): what is
// running, then every few seconds how long so far, then how long it took. A first build is about
// 45 s of otherwise silent turbo output.
import { spawn } from "node:child_process";

/**
 * Runs `cmd args` with inherited stdio and prints progress around it. Resolves with the exit code.
 * `write` and `intervalMs` are for tests.
 */
export function runStep(what, cmd, args, options = {}) {
  const write = options.write ?? ((line) => process.stdout.write(`${line}\n`));
  const intervalMs = options.intervalMs ?? 10_000;
  const started = Date.now();
  const seconds = () => Math.round((Date.now() - started) / 1000);
  write(`> ${what}...`);
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: options.cwd, stdio: options.stdio ?? "inherit" });
    const timer = setInterval(() => write(`  ${what}: ${seconds()} s so far`), intervalMs);
    const done = (code) => {
      clearInterval(timer);
      write(code === 0 ? `> ${what}: done in ${seconds()} s` : `> ${what}: failed after ${seconds()} s`);
      resolve(code);
    };
    child.on("error", (error) => {
      write(`  ${what}: cannot run ${cmd}: ${error.message}`);
      done(1);
    });
    child.on("close", (code) => done(code ?? 1));
  });
}
