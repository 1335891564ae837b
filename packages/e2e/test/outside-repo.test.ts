// What docs/getting-started.md tells a new user to do, run outside the repository with npm only:
// pack the packages, scaffold a project into a temporary folder with create-patchbay --from,
// npm install there (create-patchbay runs it), npm start, one turn through the project's own
// @patchbay/client and the page in Chromium, the project's own npm test, then Ctrl-C. Lean on
// purpose (one install, one turn): the install is most of its time (better-sqlite3 builds).
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
// @ts-expect-error: a plain .mjs script of the repository, without types
import { pack } from "../../../scripts/pack.mjs";
import { launchChromiumBrowser } from "../fixtures/chromium";

const repo = fileURLToPath(new URL("../../../", import.meta.url));
const _CHROMIUM = process.env.PATCHBAY_CHROMIUM ?? "/usr/bin/chromium";
const work = mkdtempSync(join(tmpdir(), "patchbay-outside-"));
const project = join(work, "my-agent");
let started: ChildProcess | undefined;

afterAll(() => {
  // Whatever of its process group is left (a child that ended on a signal has no exitCode).
  if (started?.pid && started.exitCode === null && started.signalCode === null) {
    try {
      process.kill(-started.pid, "SIGKILL");
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "ESRCH") throw error;
    }
  }
  rmSync(work, { recursive: true, force: true });
});

/** The environment of a user's shell: no npm_* or pnpm variables of the test runner's parents. */
function userEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([key]) => !/^(npm_|pnpm_|PNPM_|INIT_CWD$|VITEST|NODE_OPTIONS$)/i.test(key),
    ),
  );
  return { ...env, CI: "true", ...extra };
}

function run(cmd: string, args: string[], cwd: string, timeoutMs: number, env = userEnv()) {
  return new Promise<{ code: number | null; out: string }>((resolve) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += String(chunk);
    });
    child.stderr.on("data", (chunk) => {
      out += String(chunk);
    });
    const timer = setTimeout(() => child.kill("SIGKILL"), timeoutMs);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

describe("a new project outside the repository, with npm only", () => {
  it("packs, scaffolds, installs, starts, answers one turn and the page, passes its own npm test, stops on Ctrl-C", async () => {
    expect(relative(repo, work).startsWith("..")).toBe(true);
    const tarballs = join(work, "packages");
    const files: string[] = pack(["pnpm", []], tarballs, () => {});
    expect(files).toContain("create-patchbay-0.1.0.tgz");
    expect(files).toContain("patchbay-server-0.1.0.tgz");

    // The command of docs/getting-started.md: the packed create-patchbay through npx, as
    // `npm create patchbay` will run it from the registry.
    const created = await run(
      "npx",
      [
        "--yes",
        "-p",
        join(tarballs, "create-patchbay-0.1.0.tgz"),
        "create-patchbay",
        "my-agent",
        "--from",
        tarballs,
      ],
      work,
      900_000,
    );
    expect(created.out).toContain("Created my-agent in my-agent");
    expect(created.code, created.out).toBe(0);
    expect(existsSync(join(project, ".env.example"))).toBe(true);
    const manifest = JSON.parse(readFileSync(join(project, "package.json"), "utf8"));
    expect(manifest.type).toBe("module");
    expect(manifest.dependencies["@patchbay/server"]).toBe(
      "file:patchbay-packages/patchbay-server-0.1.0.tgz",
    );

    // npm start, with credentials as .env would give them.
    const apiKey = "pk_outside";
    const secret = "0123456789abcdef0123456789abcdef0123456789abcdef";
    const env = userEnv({
      PORT: "0",
      PATCHBAY_PORT: "0",
      PATCHBAY_API_KEY: apiKey,
      PATCHBAY_API_SECRET: secret,
    });
    const child = spawn("npm", ["start"], {
      cwd: project,
      env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    started = child;
    let out = "";
    child.stdout!.on("data", (chunk) => {
      out += String(chunk);
    });
    child.stderr!.on("data", (chunk) => {
      out += String(chunk);
    });
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
      child.on("close", (code, signal) => resolve({ code, signal })),
    );
    const urls = await new Promise<{ page: string; patchbay: string }>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`npm start printed no address:\n${out}`)), 60_000);
      const poll = setInterval(() => {
        const page = /Page\s+(http:\/\/\S+)/.exec(out)?.[1];
        const patchbay = /Patchbay\s+(http:\/\/\S+)/.exec(out)?.[1];
        if (page && patchbay) {
          clearInterval(poll);
          clearTimeout(timer);
          resolve({ page, patchbay });
        }
      }, 100);
      void exited.then(() => {
        clearInterval(poll);
        clearTimeout(timer);
        reject(new Error(`npm start exited:\n${out}`));
      });
    });
    expect(out).toContain("Model     scripted");

    // One turn through the project's own installed client.
    const turn = await run(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `import { Client } from "@patchbay/client";
         const client = new Client({ baseUrl: ${JSON.stringify(urls.patchbay)}, apiKey: "${apiKey}", secret: "${secret}" });
         const session = await client.agent("assistant").sessions.create({ userId: "u_1" });
         const reply = await session.responses.create("weather in Lisbon?");
         console.log(JSON.stringify(reply.text));
         client.close();`,
      ],
      project,
      30_000,
    );
    expect(turn.code, turn.out).toBe(0);
    expect(JSON.parse(turn.out.trim())).toMatch(/^In Lisbon it is \d+ °C and (sunny|cloudy|rainy)\.$/);

    // The page, in Chromium.
    const browser = await launchChromiumBrowser();
    try {
      const page = await browser.newPage();
      await page.goto(urls.page);
      await page.waitForSelector("body[data-ready=true]", { timeout: 15_000 });
      await page.fill("#input", "weather in Porto?");
      await page.press("#input", "Enter");
      const answer = page.locator("#log p.assistant");
      // The page renders the conversation as it streams: wait for the whole first sentence.
      await expect
        .poll(() => answer.first().textContent(), { timeout: 15_000 })
        .toMatch(/^In Porto it is \d+ °C/);
    } finally {
      await browser.close();
    }

    // The project's own npm test (type-check, then its node:test file).
    const tested = await run("npm", ["test"], project, 120_000);
    expect(tested.code, tested.out).toBe(0);
    expect(tested.out).toMatch(/# pass 3\n# fail 0/);

    // Ctrl-C: the whole process group gets SIGINT, as in a terminal.
    // npm itself ends by the signal, as it does in a terminal; the app must have closed everything.
    process.kill(-child.pid!, "SIGINT");
    const end = await exited;
    expect(out).toMatch(/Stopping\.\.\.\nStopped\.\n/);
    expect(out).not.toMatch(/ERR!|ELIFECYCLE|Error/);
    expect(end.code === 0 || end.signal === "SIGINT", JSON.stringify(end)).toBe(true);
  }, 1_200_000);
});
