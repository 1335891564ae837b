// The entry behind the README's commands (`npm start`, `npm test`, `npm run demo`, `npm run bench`).
// It makes a fresh clone usable on a machine that has only Node 20 and npm: it fetches the pinned
// pnpm through npx when pnpm is not installed, installs the workspace from the lockfile, builds
// the packages (turbo caches, so later runs are quick), then runs the task. The install and the
// build print what they are doing and how long it has taken so far (scripts/progress.mjs).
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pack } from "./pack.mjs";
import { runStep } from "./progress.mjs";

const root = join(import.meta.dirname, "..");
const task = process.argv[2];
const rest = process.argv.slice(3);
const pinned = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).packageManager; // pnpm@x.y.z

function run(cmd, args, options = {}) {
  const result = spawnSync(cmd, args, { cwd: root, stdio: "inherit", ...options });
  if (result.error) throw result.error;
  return result.status ?? 1;
}

function must(cmd, args, what) {
  const status = run(cmd, args);
  if (status !== 0) {
    console.error(`\n${what} failed (exit ${status}).`);
    process.exit(status);
  }
}

function pnpm() {
  const version = spawnSync("pnpm", ["--version"], { encoding: "utf8" });
  if (version.status === 0 && `pnpm@${version.stdout.trim()}` === pinned) return ["pnpm", []];
  return ["npx", ["--yes", pinned]];
}

async function withPnpm(args, what) {
  const [cmd, pre] = pnpm();
  const status = await runStep(what, cmd, [...pre, ...args], { cwd: root });
  if (status !== 0) {
    console.error(`\n${what} failed (exit ${status}).`);
    process.exit(status);
  }
}

if (!tasksNames().includes(task)) {
  console.error(`usage: node scripts/run.mjs <${tasksNames().join("|")}>`);
  process.exit(2);
}
if (!existsSync(join(root, "node_modules", ".modules.yaml"))) {
  await withPnpm(["install", "--frozen-lockfile"], "Installing the workspace (first run, pnpm)");
}
await withPnpm(
  ["exec", "turbo", "run", "build", "--output-logs=errors-only"],
  "Building the packages (turbo; cached after the first run)",
);

function tasksNames() {
  return ["start", "demo", "bench", "test", "pack"];
}

const tasks = {
  start: () => run(process.execPath, [join(root, "scripts", "main-job.mjs"), ...rest]),
  demo: () => run(process.execPath, [join(root, "scripts", "main-job.mjs"), "--demo", ...rest]),
  bench: () => run(...pnpmArgs(["--filter", "@patchbay/bench", "bench", ...rest])),
  pack: () => {
    pack(pnpm());
    return 0;
  },
  test: () => {
    ensureChromium();
    return run(process.execPath, [join(root, "scripts", "vitest-summary.mjs"), ...rest]);
  },
};

function pnpmArgs(args) {
  const [cmd, pre] = pnpm();
  return [cmd, [...pre, ...args]];
}

// The browser tests drive Debian's Chromium through playwright-core. Install it when we may.
function ensureChromium() {
  if (process.env.PATCHBAY_CHROMIUM || existsSync("/usr/bin/chromium")) return;
  if (process.getuid?.() === 0 && existsSync("/usr/bin/apt-get")) {
    console.log("Installing Debian's chromium for the browser tests (apt-get)...");
    run("apt-get", ["update", "-qq"]);
    must("apt-get", ["install", "-y", "-qq", "chromium"], "Installing chromium");
  } else {
    console.error("The browser tests need Chromium at /usr/bin/chromium (Debian: apt-get install chromium),");
    console.error("or PATCHBAY_CHROMIUM pointing at a Chromium binary.");
  }
}

process.exit(tasks[task]());
