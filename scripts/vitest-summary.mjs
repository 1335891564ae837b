// Runs the whole vitest suite once and ends with the line CI reads: `N passed, N failed`.
// The figures come from vitest's JSON report, not from its human-readable summary.
import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";

const root = join(import.meta.dirname, "..");
const reportDir = join(root, "test-results");
const report = join(reportDir, "vitest.json");
mkdirSync(reportDir, { recursive: true });
rmSync(report, { force: true });

const vitest = join(root, "node_modules", "vitest", "vitest.mjs");
const run = spawnSync(
  process.execPath,
  [
    vitest,
    "run",
    "--reporter=default",
    "--reporter=json",
    `--outputFile.json=${report}`,
    ...process.argv.slice(2),
  ],
  { cwd: root, stdio: "inherit" },
);

let passed = 0;
let failed = 0;
try {
  const json = JSON.parse(readFileSync(report, "utf8"));
  passed = json.numPassedTests ?? 0;
  failed = (json.numFailedTests ?? 0) + (json.numRuntimeErrorTestSuites ?? 0);
  // A test file that failed to load has no tests in it but must still count as a failure.
  for (const file of json.testResults ?? []) {
    if (file.status === "failed" && (file.assertionResults ?? []).length === 0) failed += 1;
  }
} catch (error) {
  console.error(`could not read the vitest JSON report at ${report}: ${error.message}`);
  failed = Math.max(failed, 1);
}
console.log(`${passed} passed, ${failed} failed`);
process.exit(run.status === 0 && failed === 0 && passed > 0 ? 0 : 1);
