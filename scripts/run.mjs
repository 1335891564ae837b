// The entry behind the README's commands (`npm start`, `npm test`, `npm run demo`, `npm run bench`).
// It makes a fresh clone usable on a machine that has only Node 20 and npm: it fetches the pinned
// pnpm through npx when pnpm is not installed, installs the workspace from the lockfile, builds
// the packages (turbo caches, so later runs are quick), then runs the task.
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

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

function withPnpm(args, what) {
  const [cmd, pre] = pnpm();
  must(cmd, [...pre, ...args], what);
}

if (!existsSync(join(root, "node_modules", ".modules.yaml"))) {
  withPnpm(["install", "--frozen-lockfile"], "Installing the workspace");
}
withPnpm(["exec", "turbo", "run", "build", "--output-logs=errors-only"], "Building the packages");

const tasks = {
  start: () => run(process.execPath, [join(root, "scripts", "main-job.mjs"), ...rest]),
  demo: () => run(process.execPath, [join(root, "scripts", "main-job.mjs"), "--demo", ...rest]),
  bench: () => run(...pnpmArgs(["--filter", "@patchbay/bench", "bench", ...rest])),
  // The conformance kit against every worker SDK in the repository (packages/conformance).
  conformance: () => run(...pnpmArgs(["--filter", "@patchbay/conformance", "--silent", "all", ...rest])),
  test: () => {
    ensureTestPackages();
    return run(process.execPath, [join(root, "scripts", "vitest-summary.mjs"), ...rest]);
  },
};

function pnpmArgs(args) {
  const [cmd, pre] = pnpm();
  return [cmd, [...pre, ...args]];
}

// The browser tests drive Debian's Chromium through playwright-core, and the Postgres store's
// tests start a throwaway PostgreSQL from Debian's postgresql package. Install them when we may.
function hasPostgres() {
  const root = "/usr/lib/postgresql";
  return existsSync(root) && readdirSync(root).some((v) => existsSync(join(root, v, "bin", "initdb")));
}

function ensureTestPackages() {
  const missing = [];
  if (!process.env.PATCHBAY_CHROMIUM && !existsSync("/usr/bin/chromium")) missing.push("chromium");
  if (!process.env.PATCHBAY_TEST_DATABASE_URL && !hasPostgres()) missing.push("postgresql");
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

if (!tasks[task]) {
  console.error(`usage: node scripts/run.mjs <${Object.keys(tasks).join("|")}>`);
  process.exit(2);
}
process.exit(tasks[task]());
