// scripts/run.mjs prints what a long first-run step does and how long it has taken so far
// (scripts/progress.mjs), instead of a silent first build.
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script of the repository, without types
import { runStep } from "../../../scripts/progress.mjs";

describe("first-run progress lines", () => {
  it("says what runs, how long so far while it runs, and how long it took", async () => {
    const lines: string[] = [];
    const code = await runStep(
      "Building the packages",
      process.execPath,
      ["-e", "setTimeout(() => {}, 450)"],
      {
        intervalMs: 100,
        stdio: "ignore",
        write: (line: string) => lines.push(line),
      },
    );
    expect(code).toBe(0);
    expect(lines[0]).toBe("> Building the packages...");
    expect(
      lines.filter((line) => /^ {2}Building the packages: \d+ s so far$/.test(line)).length,
    ).toBeGreaterThanOrEqual(2);
    expect(lines.at(-1)).toMatch(/^> Building the packages: done in \d+ s$/);
  });

  it("says when a step failed, with its exit code passed on", async () => {
    const lines: string[] = [];
    const code = await runStep("Installing", process.execPath, ["-e", "process.exit(3)"], {
      stdio: "ignore",
      write: (line: string) => lines.push(line),
    });
    expect(code).toBe(3);
    expect(lines.at(-1)).toMatch(/^> Installing: failed after \d+ s$/);
  });
});
