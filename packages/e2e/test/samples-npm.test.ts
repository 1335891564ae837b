// The samples run from the repository root with npm alone (`npm run sample:<name>`, no pnpm) and
// stop cleanly on Ctrl-C: the whole process group gets SIGINT, as in a terminal.
import { spawn } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("../../../", import.meta.url));

describe("samples from the root with npm", () => {
  it("has one npm script per sample app, each for an app that exists", () => {
    const scripts = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).scripts as Record<
      string,
      string
    >;
    const samples = Object.keys(scripts).filter((name) => name.startsWith("sample:"));
    expect(samples.sort()).toEqual([
      "sample:browser-assistant",
      "sample:flight-booking",
      "sample:support-desk",
    ]);
    for (const name of samples) {
      expect(existsSync(join(root, "apps", name.slice("sample:".length), "package.json"))).toBe(true);
      expect(scripts[name]).toBe(`node scripts/run.mjs sample ${name.slice("sample:".length)}`);
    }
  });

  it("answers in the flight-booking sample, then stops on Ctrl-C without an npm or pnpm error", async () => {
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([key]) => !/^(npm_|pnpm_|VITEST|OPENAI_|ANTHROPIC_)/i.test(key)),
    );
    const child = spawn("npm", ["run", "sample:flight-booking"], {
      cwd: root,
      env: { ...env, PATCHBAY_SKIP_BUILD: "1" },
      detached: true,
      stdio: ["pipe", "pipe", "pipe"],
    });
    let out = "";
    child.stdout!.on("data", (chunk) => {
      out += String(chunk);
    });
    child.stderr!.on("data", (chunk) => {
      out += String(chunk);
    });
    const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on("close", (code, signal) => resolve({ code, signal })),
    );
    const until = (pattern: RegExp, ms: number) =>
      new Promise<void>((resolve, reject) => {
        const started = Date.now();
        const poll = setInterval(() => {
          if (pattern.test(out)) {
            clearInterval(poll);
            resolve();
          } else if (Date.now() - started > ms) {
            clearInterval(poll);
            reject(new Error(`no ${pattern} within ${ms} ms:\n${out}`));
          }
        }, 50);
      });
    try {
      await until(/you> /, 120_000);
      child.stdin!.write("flights to Lisbon\n");
      await until(/agent> Flights to LIS/, 20_000);
      process.kill(-child.pid!, "SIGINT");
      const end = await closed;
      expect(end.code === 0 || end.signal === "SIGINT", JSON.stringify(end)).toBe(true);
      expect(out).not.toMatch(/ERR_PNPM|npm error|ELIFECYCLE|\n\s+at /);
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, "SIGKILL");
    }
  }, 180_000);
});
