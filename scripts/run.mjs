// The entry behind the README's commands (`npm start`, `npm test`, `npm run demo`, `npm run bench`).
// It makes a fresh clone usable on a machine that has only Node 20 and npm: it fetches the pinned
// pnpm through npx when pnpm is not installed, installs the workspace from the lockfile, builds
// the packages (turbo caches, so later runs are quick), then runs the task. The install and the
// build print what they are doing and how long it has taken so far (scripts/progress.mjs).
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
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

function pnpmArgs(args) {
  const [cmd, pre] = pnpm();
  return [cmd, [...pre, ...args]];
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
// The tests that run these scripts set PATCHBAY_SKIP_BUILD: the suite runs after the build, and a
// turbo cache restore would rewrite dist/ under the other tests running beside them.
if (!process.env.PATCHBAY_SKIP_BUILD) {
  await withPnpm(
    ["exec", "turbo", "run", "build", "--output-logs=errors-only"],
    "Building the packages (turbo; cached after the first run)",
  );
}

function tasksNames() {
  return ["start", "demo", "bench", "test", "pack", "sample", "conformance"];
}

/** The samples `npm run sample:<name>` starts, each from its app folder. */
const SAMPLES = {
  "browser-assistant": "backend/start.ts",
  "flight-booking": "src/start.ts",
  "support-desk": "src/demo.ts",
};

/**
 * Runs a long-lived child with the terminal. Ctrl-C reaches the whole foreground process group,
 * so the child gets it too and shuts down its own way; this parent only waits for it (a second
 * Ctrl-C still ends everything) and exits with its code, so npm prints no error for a clean stop.
 */
function attached(cmd, args, cwd = root) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, stdio: "inherit" });
    let interrupts = 0;
    const onInterrupt = () => {
      interrupts += 1;
      if (interrupts > 1) child.kill("SIGKILL");
    };
    const onTerm = () => child.kill("SIGTERM");
    process.on("SIGINT", onInterrupt);
    process.on("SIGTERM", onTerm);
    child.on("close", (code, signal) => {
      process.off("SIGINT", onInterrupt);
      process.off("SIGTERM", onTerm);
      resolve(code ?? (signal === "SIGINT" ? 0 : 1));
    });
  });
}

const tasks = {
  start: () => attached(process.execPath, [join(root, "scripts", "main-job.mjs"), ...rest]),
  demo: () => attached(process.execPath, [join(root, "scripts", "main-job.mjs"), "--demo", ...rest]),
  bench: () => attached(process.execPath, ["--import", "tsx", "src/main.ts", ...rest], join(root, "bench")),
  sample: () => {
    const [name, ...args] = rest;
    if (!SAMPLES[name]) {
      console.error(`usage: node scripts/run.mjs sample <${Object.keys(SAMPLES).join("|")}>`);
      return 2;
    }
    const app = join(root, "apps", name);
    return attached(process.execPath, ["--import", "tsx", join(app, SAMPLES[name]), ...args], app);
  },
  // The conformance kit against every worker SDK in the repository (packages/conformance).
  conformance: () => run(...pnpmArgs(["--filter", "@patchbay/conformance", "--silent", "all", ...rest])),
  pack: () => {
    pack(pnpm());
    return 0;
  },
  test: () => {
    ensureTestPackages();
    return run(process.execPath, [join(root, "scripts", "vitest-summary.mjs"), ...rest]);
  },
};

// The browser tests drive Debian's Chromium through playwright-core, the Postgres store's tests
// start a throwaway PostgreSQL from Debian's postgresql package, and a worker written in Python
// runs on /usr/bin/python3 with Debian's python3-websockets. Install them when we may.
function hasPostgres() {
  const root = "/usr/lib/postgresql";
  return existsSync(root) && readdirSync(root).some((v) => existsSync(join(root, v, "bin", "initdb")));
}

function ensureTestPackages() {
  const missing = [];
  if (!process.env.PATCHBAY_CHROMIUM && !existsSync("/usr/bin/chromium")) missing.push("chromium");
  if (!process.env.PATCHBAY_TEST_DATABASE_URL && !hasPostgres()) missing.push("postgresql");
  const pythonWebsockets = spawnSync("/usr/bin/python3", ["-c", "import websockets"], { stdio: "ignore" });
  if (pythonWebsockets.status !== 0) missing.push("python3-websockets");
  if (missing.length === 0) return;
  if (process.getuid?.() === 0 && existsSync("/usr/bin/apt-get")) {
    console.log(`Installing Debian's ${missing.join(" and ")} for the tests (apt-get)...`);
    run("apt-get", ["update", "-qq"]);
    must("apt-get", ["install", "-y", "-qq", ...missing], `Installing ${missing.join(", ")}`);
  } else {
    console.error(`The tests need Debian's ${missing.join(" and ")} (apt-get install ${missing.join(" ")}).`);
    console.error("Chromium may also be given as PATCHBAY_CHROMIUM (a binary), Postgres as");
    console.error("PATCHBAY_TEST_DATABASE_URL (a server the tests may create databases on).");
  }
}

process.exit(await tasks[task]());
