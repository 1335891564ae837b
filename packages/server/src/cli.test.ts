// The `patchbay` command as a process: src/cli.ts run by tsx (with @patchbay/* mapped to their
// sources, as the test projects do), so these tests need no build and see the code as it is.
// packages/e2e/test/server-cli.test.ts runs the built bin.
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type Server } from "node:http";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { CLI_OPTIONS } from "./config/cli-options";
import { startTestPostgres, type TestPostgres } from "./testing/postgres-server";

const repo = fileURLToPath(new URL("../../../", import.meta.url));
const CLI = join(repo, "packages/server/src/cli.ts");
// tsx comes with tsup (a root dev dependency), which this package can resolve.
const TSX = pathToFileURL(createRequire(createRequire(import.meta.url).resolve("tsup")).resolve("tsx")).href;
const SECRET = "cli-test-secret-value-of-at-least-32-bytes";

const dirs: string[] = [];
let tsconfig: string;
beforeAll(() => {
  const dir = mkdtempSync(join(tmpdir(), "patchbay-cli-tsx-"));
  dirs.push(dir);
  tsconfig = join(dir, "tsconfig.json");
  const paths = {
    "@patchbay/protocol/lite": ["packages/protocol/src/lite.ts"],
    "@patchbay/protocol/runtime": ["packages/protocol/src/runtime.ts"],
    "@patchbay/*": ["packages/*/src/index.ts"],
  };
  writeFileSync(tsconfig, JSON.stringify({ compilerOptions: { baseUrl: repo, paths } }));
});
afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const children: ReturnType<typeof spawn>[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs `patchbay <args>`. With `until`, resolves as soon as stdout matches it (the process keeps
 * running until the test ends); otherwise when it exits, or after 45 s (then `code` is null: a
 * server that started where it should have refused).
 */
function patchbay(args: string[], env: Record<string, string>, until?: RegExp): Promise<Run> {
  const child = spawn(process.execPath, ["--import", TSX, CLI, ...args], {
    env: { PATH: process.env.PATH ?? "", TSX_TSCONFIG_PATH: tsconfig, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  const run: Run = { code: null, stdout: "", stderr: "" };
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(run), 45_000);
    child.stdout.on("data", (chunk) => {
      run.stdout += String(chunk);
      if (until?.test(run.stdout)) {
        clearTimeout(timer);
        resolve(run);
      }
    });
    child.stderr.on("data", (chunk) => {
      run.stderr += String(chunk);
    });
    child.on("exit", (code) => {
      clearTimeout(timer);
      run.code = code;
      resolve(run);
    });
  });
}

/** A config directory with `agents/support.yaml` (scripted unless given), and the environment for it. */
function workspace(agent = "model:\n  provider: scripted\n") {
  const root = mkdtempSync(join(tmpdir(), "patchbay-cli-"));
  dirs.push(root);
  mkdirSync(join(root, "config", "agents"), { recursive: true });
  writeFileSync(join(root, "config", "agents", "support.yaml"), agent);
  const env = {
    PATCHBAY_API_KEY: "pk_cli",
    PATCHBAY_API_SECRET: SECRET,
    PATCHBAY_DATA_DIR: join(root, "data"),
    PATCHBAY_CONFIG_DIR: join(root, "config"),
    PATCHBAY_PORT: "0",
    PATCHBAY_LOG_LEVEL: "warn",
  };
  return { root, config: join(root, "config"), env };
}

/** One line on stderr (plus the pointer to --help), no stack trace. */
function oneLine(run: Run): string {
  expect(run.stderr).not.toMatch(/\n\s+at /);
  return run.stderr.split("\n")[0]!;
}

describe("patchbay --help and the docs", () => {
  it("lists every option, and the model variables an agent reads", async () => {
    const help = (await patchbay(["--help"], {})).stdout;
    const production = readFileSync(join(repo, "docs/production.md"), "utf8");
    const readme = readFileSync(join(repo, "packages/server/README.md"), "utf8");
    for (const [flag, option] of Object.entries(CLI_OPTIONS)) {
      expect(help).toContain(`--${flag}`);
      if (["help", "version", "expires-in"].includes(flag)) continue;
      // Every serve option is in both flag tables, with its variable.
      for (const doc of [production, readme]) {
        const row = doc.split("\n").find((line) => line.startsWith("|") && line.includes(`\`--${flag}`));
        expect(row, `--${flag} in a flag table`).toBeDefined();
        if ("env" in option) expect(row).toContain(option.env);
      }
    }
    for (const variable of [
      "OPENAI_API_KEY",
      "OPENAI_MODEL",
      "OPENAI_BASE_URL",
      "ANTHROPIC_API_KEY",
      "ANTHROPIC_MODEL",
      "ANTHROPIC_BASE_URL",
      "GEMINI_API_KEY",
      "PATCHBAY_MODEL_IMAGES",
    ]) {
      expect(help).toContain(variable);
    }
  }, 120_000);
});

describe("patchbay serve: the model variables", () => {
  let provider: Server;
  const seen: { path: string; model: string }[] = [];
  beforeAll(async () => {
    provider = createHttpServer((req, res) => {
      let body = "";
      req.on("data", (chunk) => {
        body += String(chunk);
      });
      req.on("end", () => {
        seen.push({ path: req.url ?? "", model: JSON.parse(body).model });
        res.writeHead(200, { "content-type": "text/event-stream" });
        const chunk = { id: "c", object: "chat.completion.chunk", choices: [] as unknown[] };
        chunk.choices = [{ index: 0, delta: { content: "hi" }, finish_reason: "stop" }];
        res.end(`data: ${JSON.stringify(chunk)}\n\ndata: [DONE]\n\n`);
      });
    });
    await new Promise<void>((resolve) => provider.listen(0, "127.0.0.1", resolve));
  });
  afterAll(() => new Promise<void>((resolve) => provider.close(() => resolve())));

  it("an agent whose model: leaves out the name and base_url uses OPENAI_MODEL and OPENAI_BASE_URL", async () => {
    const { env } = workspace("model:\n  provider: openai\n");
    const port = (provider.address() as { port: number }).port;
    const run = await patchbay(
      ["serve"],
      { ...env, OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1`, OPENAI_MODEL: "model-from-env" },
      /listening on (http:\S+)/,
    );
    const url = /listening on (http:\S+)/.exec(run.stdout)?.[1];
    expect(url, run.stderr).toBeDefined();
    const headers = {
      "x-api-key": "pk_cli",
      authorization: `Bearer ${SECRET}`,
      "content-type": "application/json",
    };
    const created = await fetch(`${url}/v1/agents/support/sessions`, {
      method: "POST",
      headers,
      body: JSON.stringify({ userId: "u1" }),
    });
    const { id } = (await created.json()) as { id: string };
    const sent = await fetch(`${url}/v1/sessions/${id}/messages`, {
      method: "POST",
      headers,
      body: JSON.stringify({ commandId: "c1", text: "hello" }),
    });
    expect(sent.status).toBe(202);
    const deadline = Date.now() + 10_000;
    while (seen.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(seen[0]).toEqual({ path: "/v1/chat/completions", model: "model-from-env" });
  }, 120_000);
});

describe("patchbay serve: refused configuration, in one line", () => {
  it("refuses a misspelt PATCHBAY_LIMIT_ name and patchbay.yaml keys that are not limits", async () => {
    const typo = workspace();
    const limit = workspace();
    writeFileSync(join(limit.config, "patchbay.yaml"), "limit:\n  maxSessionsPerUser: 4\n");
    const port = workspace();
    writeFileSync(join(port.config, "patchbay.yaml"), "limits:\n  maxSessionsPerUser: 4\nport: 19005\n");
    const syntax = workspace();
    writeFileSync(join(syntax.config, "patchbay.yaml"), "limits:\n  maxSessionsPerUser: [4\n");
    const [a, b, c, d] = await Promise.all([
      patchbay(["serve"], { ...typo.env, PATCHBAY_LIMIT_MAX_SESSIONS_PER_USERX: "4" }),
      patchbay(["serve"], limit.env),
      patchbay(["serve"], port.env),
      patchbay(["serve"], syntax.env),
    ]);
    expect([a.code, b.code, c.code, d.code]).toEqual([2, 2, 2, 2]);
    expect(oneLine(a)).toBe(
      "patchbay: PATCHBAY_LIMIT_MAX_SESSIONS_PER_USERX=4: unknown limit (did you mean PATCHBAY_LIMIT_MAX_SESSIONS_PER_USER?); the names are in docs/security.md",
    );
    const file = (w: { config: string }) => join(w.config, "patchbay.yaml");
    expect(oneLine(b)).toBe(
      `patchbay: ${file(limit)}:1:1: unknown key 'limit' (did you mean 'limits'?); the file holds only limits:`,
    );
    expect(oneLine(c)).toBe(
      `patchbay: ${file(port)}:3:1: 'port' is not a patchbay.yaml setting: pass --port (or PATCHBAY_PORT); the file holds only limits:`,
    );
    expect(oneLine(d)).toMatch(new RegExp(`^patchbay: ${file(syntax)}:\\d+:\\d+: YAML syntax error: `));
  }, 120_000);

  it("refuses a --config-dir that does not exist, naming it", async () => {
    const { env, root } = workspace();
    const missing = join(root, "no-such-config");
    const [flag, variable] = await Promise.all([
      patchbay(["serve", "--config-dir", missing], env),
      patchbay(["serve"], { ...env, PATCHBAY_CONFIG_DIR: missing }),
    ]);
    expect([flag.code, variable.code]).toEqual([2, 2]);
    expect(oneLine(flag)).toBe(
      `patchbay: --config-dir ${missing}: no such directory (it holds agents/<name>.yaml and patchbay.yaml)`,
    );
    expect(oneLine(variable)).toContain(`PATCHBAY_CONFIG_DIR ${missing}: no such directory`);
  }, 120_000);

  it("names --host when it is no address of this machine, and range-checks a negative number", async () => {
    const { env } = workspace();
    const [host, grace] = await Promise.all([
      patchbay(["serve", "--host", "999.1.1.1"], env),
      patchbay(["serve", "--shutdown-grace-ms", "-5"], env),
    ]);
    expect([host.code, grace.code]).toEqual([2, 2]);
    expect(oneLine(host)).toMatch(/^patchbay: --host 999\.1\.1\.1 \(or PATCHBAY_HOST\): /);
    expect(oneLine(grace)).toBe(
      "patchbay: --shutdown-grace-ms must be an integer from 0 to 600000, got '-5'",
    );
  }, 120_000);
});

describe("patchbay serve: a database it cannot open", () => {
  let postgres: TestPostgres | undefined;
  afterAll(async () => {
    await postgres?.stop();
  });

  it("says so in one line with the masked URL and the cause, and exits 3", async () => {
    const { env } = workspace();
    postgres = await startTestPostgres();
    const missing = new URL(postgres.url);
    missing.pathname = "/no_such_database";
    missing.password = "hunter2";
    const down = "postgres://patchbay:hunter2@127.0.0.1:1/patchbay";
    const [refused, absent] = await Promise.all([
      patchbay(["serve", "--database-url", down], env),
      patchbay(["serve"], { ...env, PATCHBAY_DATABASE_URL: missing.href }),
    ]);
    expect([refused.code, absent.code]).toEqual([3, 3]);
    expect(oneLine(refused)).toBe(
      "patchbay: cannot open the database postgres://patchbay:***@127.0.0.1:1/patchbay (--database-url or PATCHBAY_DATABASE_URL): connect ECONNREFUSED 127.0.0.1:1",
    );
    expect(oneLine(absent)).toMatch(
      /^patchbay: cannot open the database postgres:\/\/.*no_such_database .*: /,
    );
    expect(absent.stderr).toContain('database "no_such_database" does not exist');
    expect(refused.stderr + absent.stderr).not.toContain("hunter2");
  }, 120_000);
});

describe("patchbay token", () => {
  it("refuses a short secret as serve does, and names --expires-in and its format", async () => {
    const [short, serve, expires, ok] = await Promise.all([
      patchbay(["token", "u1"], { PATCHBAY_API_SECRET: "short" }),
      patchbay(["serve"], { ...workspace().env, PATCHBAY_API_SECRET: "short" }),
      patchbay(["token", "u1", "--expires-in", "15x"], { PATCHBAY_API_SECRET: SECRET }),
      patchbay(["token", "u1", "--expires-in", "15m"], { PATCHBAY_API_SECRET: SECRET }),
    ]);
    expect([short.code, serve.code, expires.code, ok.code]).toEqual([2, 2, 2, 0]);
    expect(oneLine(short)).toBe(oneLine(serve));
    expect(oneLine(short)).toContain("the secret is 5 bytes; production needs at least 32");
    expect(oneLine(expires)).toBe(
      "patchbay: --expires-in must be whole seconds (3600) or a number and a unit, s, m, h, d, w or y (15m, 12h, 7d); got '15x'",
    );
    expect(ok.stdout).toMatch(/^ey[\w-]+\.[\w-]+\.[\w-]+\n$/);
  }, 120_000);
});
