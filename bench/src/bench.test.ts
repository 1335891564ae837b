// The harness's smoke test: a `--quick` run (tiny caps, every scenario, real child processes)
// must print the machine line and one row for every measure of every scenario, each measured.
// No figure is asserted: timings on a shared machine are not a test's business. Like every test
// here it runs the packages from source (tsconfig.source.json maps @patchbay/* to src), so it
// never reads a stale build, nor a dist that a concurrent build is rewriting.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";
import { QUICK } from "./budget";
import { scenarios } from "./scenarios";

it("prints every row of every scenario in a quick run", () => {
  const run = spawnSync(process.execPath, ["--import", "tsx", "src/main.ts", "--quick"], {
    cwd: fileURLToPath(new URL("..", import.meta.url)),
    encoding: "utf8",
    env: { ...process.env, TSX_TSCONFIG_PATH: "tsconfig.source.json" },
    // Generous: quick takes under a minute alone, but CI runs it beside every other test file.
    timeout: 240_000,
  });
  expect(run.status, run.stderr).toBe(0);
  // Quiet except the table (stdout) and its progress lines (stderr, each `bench: ...`).
  const noise = run.stderr.split("\n").filter((line) => line !== "" && !line.startsWith("bench: "));
  expect(noise).toEqual([]);
  const lines = run.stdout.split("\n");
  expect(lines[0]).toMatch(/^machine: \d+ cores .*node v\d+/);
  for (const scenario of scenarios) {
    for (const measure of scenario.measures(QUICK)) {
      const row = lines.find((line) => {
        const cells = line.split("|").map((cell) => cell.trim());
        return cells[1] === scenario.id && cells[2] === measure;
      });
      expect(row, `${scenario.id}: ${measure}`).toBeDefined();
      expect(row).not.toContain("not measured");
    }
  }
  // Each of issue 20's goals (src/goals.ts) is reported on its row, met or missed.
  const goalsOf = (id: string) =>
    lines.filter((line) => {
      const cells = line.split("|").map((cell) => cell.trim());
      return cells[1] === id && /: (met|missed)$/.test(cells[6] ?? "");
    }).length;
  expect({
    hosted: goalsOf("1 hosted tool call"),
    page: goalsOf("2 page tool call"),
    turn: goalsOf("4 whole turn"),
    idle: goalsOf("5 scale: idle sessions"),
  }).toEqual({ hosted: 2, page: 2, turn: 2, idle: 1 });
}, 250_000);
