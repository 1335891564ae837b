import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { expect, it } from "vitest";

it("drops MaxListenersExceededWarning and prints every other warning", () => {
  const script = `
    await import("./src/quiet-warnings.ts");
    const { EventEmitter } = await import("node:events");
    const emitter = new EventEmitter();
    for (let i = 0; i < 20; i++) emitter.on("drain", () => {});
    process.emitWarning("something else", "DeprecationWarning");`;
  const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", script], {
    cwd: fileURLToPath(new URL("..", import.meta.url)),
    encoding: "utf8",
    timeout: 30_000,
  });
  expect(run.status, run.stderr).toBe(0);
  expect(run.stderr).not.toContain("MaxListenersExceededWarning");
  expect(run.stderr).toContain("DeprecationWarning: something else");
});
