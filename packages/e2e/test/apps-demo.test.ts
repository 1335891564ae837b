import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";

// `npm run demo` end to end: the main job starts the real stack (server, SQLite, the flight
// worker, the page server) and talks to it through the real client. It runs from the built
// packages, as `npm run demo` does after its build.

const root = fileURLToPath(new URL("../../../", import.meta.url));
let child: ChildProcess | undefined;

afterAll(() => {
  if (child && child.exitCode === null) child.kill("SIGKILL");
});

function runDemo(): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    let output = "";
    child = spawn(process.execPath, ["scripts/main-job.mjs", "--demo"], {
      cwd: root,
      env: { ...process.env, OPENAI_API_KEY: "", ANTHROPIC_API_KEY: "" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout!.on("data", (chunk) => (output += chunk));
    child.stderr!.on("data", (chunk) => (output += chunk));
    child.once("error", reject);
    child.once("exit", (code) => resolve({ code, output }));
  });
}

describe("npm run demo", () => {
  it("shows every feature in a transcript and exits 0", async () => {
    const { code, output } = await runDemo();
    expect(output).toContain("Demo complete: every step happened as expected.");
    expect(code).toBe(0);
    for (const line of [
      'tool  search_flights({"to":"New York"}) on the worker',
      "image image/png",
      'ask   "Book 2 seat(s) on flight LH400?"',
      "ask   answered: allowed",
      "seats: Input should be less than or equal to 9",
      "tool  search_flights cancelled",
      "tool  get_local_context({}) in the page",
      "ask   answered: declined",
      "conversation items replayed",
    ]) {
      expect(output).toContain(line);
    }
    expect(output).toMatch(/\.\.\. {3}Asking \w+ for flights to JFK/);
    expect(output).not.toContain("FAILED");
  }, 90_000);
});
