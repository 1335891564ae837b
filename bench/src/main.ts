// `pnpm bench`: runs every scenario against its baseline in the same run and prints one table.
// Flags: `--quick` (a smoke run with tiny caps, for the test that checks every row is printed),
// `--only <text>` (scenarios whose id contains the text; for working on one scenario).
import "./quiet-warnings";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, loadavg, platform, tmpdir } from "node:os";
import { join } from "node:path";
import { FULL, QUICK } from "./budget";
import { killAllChildren } from "./children";
import { runCleanups } from "./cleanup";
import { warmUp, withDeadline } from "./measure";
import { startRawWsFloor } from "./raw-ws-floor";
import { type BenchContext, failedRows } from "./scenario";
import { onDemandScenarios, scenarios } from "./scenarios";
import { type Row, renderTable } from "./table";

const args = process.argv.slice(2);
const budget = args.includes("--quick") ? QUICK : FULL;
const onlyIndex = args.indexOf("--only");
const only = onlyIndex >= 0 ? args[onlyIndex + 1] : undefined;

// Every data directory of the run's servers is made below one directory of its own (peers
// inherit BENCH_DATA_ROOT), removed when the run ends: a peer killed with SIGKILL leaves its
// SQLite files behind.
const dataRoot = mkdtempSync(join(process.env.BENCH_DATA_ROOT ?? tmpdir(), "patchbay-bench-run-"));
process.env.BENCH_DATA_ROOT = dataRoot;
const removeData = () => rmSync(dataRoot, { recursive: true, force: true });

// The whole run is bounded: whatever hangs, the children die and the process ends.
const watchdog = setTimeout(() => {
  console.error(`bench: watchdog: the run passed ${budget.watchdogMs} ms; stopping`);
  killAllChildren();
  void runCleanups().finally(() => {
    removeData();
    process.exit(2);
  });
}, budget.watchdogMs);
watchdog.unref();

function machine(): string {
  const cores = cpus();
  const load = loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
  return `machine: ${cores.length} cores (${cores[0]?.model.trim() ?? "unknown"}), node ${process.version}, ${platform()}, load average ${load}`;
}

async function main(): Promise<number> {
  const started = performance.now();
  // An exact id selects that scenario alone; otherwise every id containing the text.
  const named = only === undefined ? scenarios : [...scenarios, ...onDemandScenarios];
  const exact = named.filter((s) => s.id === only);
  const selected = exact.length ? exact : named.filter((s) => only === undefined || s.id.includes(only));
  console.error(`bench: ${budget.quick ? "quick" : "full"} run of ${selected.length} scenarios`);
  const floor = await startRawWsFloor();
  const context: BenchContext = { budget, floor };
  const rows: Row[] = [];
  let failures = 0;
  try {
    await warmUp(floor, budget);
    for (const scenario of selected) {
      const t0 = performance.now();
      try {
        rows.push(...(await withDeadline(scenario.run(context), budget.scenarioMs, scenario.id)));
      } catch (error) {
        failures++;
        console.error(`bench: ${scenario.id} failed:`, error);
        rows.push(...failedRows(scenario, budget, error));
      }
      console.error(`bench: ${scenario.id} done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
  } finally {
    await floor.close().catch(() => {});
  }
  console.log(machine());
  console.log(renderTable(rows));
  console.log(
    `total ${((performance.now() - started) / 1000).toFixed(1)} s${budget.quick ? " (quick run: figures are not meaningful)" : ""}`,
  );
  return failures === 0 ? 0 : 1;
}

main()
  .catch((error) => {
    console.error(error);
    return 1;
  })
  .then(async (code) => {
    // An abandoned scenario's services (PostgreSQL, nats-server) are stopped before the exit.
    await runCleanups();
    killAllChildren();
    removeData();
    process.exit(code);
  });
