import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createUserToken } from "@patchbay/server";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { CLI_PATH, cliWorkspaces, runCli } from "./helpers/cli-process";
import { RawClient } from "./helpers/raw-client";

const { workspace: newWorkspace, start } = cliWorkspaces("patchbay-cli-");

const AGENT = `name: Support
instructions: You help with orders.
model:
  provider: scripted
  rules:
    - match: "where am i"
      tool_calls:
        - tool: locate
      reply: "You are in {result}."
    - match: hello
      reply: Hello from the CLI.
`;

const workspace = (agentText = AGENT) => newWorkspace(agentText);

describe("patchbay serve", () => {
  it("lets pages of the --cors-origins list call the API, and refuses a list that is not origins", async () => {
    const { env } = workspace();
    const page = "http://localhost:5173";
    const cli = await start(["serve", "--cors-origins", `${page},https://app.example.com`], env);
    const preflight = await fetch(`${cli.url}/v1/sessions/s_1`, {
      method: "OPTIONS",
      headers: { origin: page, "access-control-request-method": "GET" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe(page);
    const other = await fetch(`${cli.url}/healthz`, { headers: { origin: "https://evil.example" } });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    cli.child.kill("SIGTERM");
    expect((await cli.exited).code).toBe(0);

    const bad = await runCli(["serve"], { ...env, PATCHBAY_CORS_ORIGINS: "https://app.example.com/path" });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/CORS origin/);
  });

  it("serves, answers health checks, and shuts down cleanly on SIGTERM", async () => {
    const { env } = workspace();
    const cli = await start(["serve"], env);
    expect(cli.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await fetch(`${cli.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${cli.url}/readyz`)).status).toBe(200);
    const metrics = await (await fetch(`${cli.url}/metrics`)).text();
    expect(metrics).toContain("patchbay_sessions_active");
    expect(metrics).toContain("process_cpu_user_seconds_total");
    cli.child.kill("SIGTERM");
    expect(await cli.exited).toEqual({ code: 0, signal: null });
  });

  it("refuses a bad agent file with the file, the line and what is wrong", async () => {
    const { env, root } = workspace("model:\n  provider: scripted\nmax_tool_rounds: lots\n");
    const result = await runCli(["serve"], env);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `${join(root, "config", "agents", "support.yaml")}:3:18: max_tool_rounds:`,
    );
  });

  it("refuses a data directory a newer server wrote, with both versions and no stack trace", async () => {
    const { env } = workspace();
    mkdirSync(env.PATCHBAY_DATA_DIR);
    const file = join(env.PATCHBAY_DATA_DIR, "patchbay.sqlite");
    const db = new Database(file);
    db.pragma("user_version = 999");
    db.close();
    const result = await runCli(["serve"], env);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(
      `patchbay: ${file} has schema version 999, but this server supports versions up to `,
    );
    expect(result.stderr).toMatch(/^patchbay: /);
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(result.stdout).not.toContain("listening");
  });

  it("says the server is not built when the bin runs before the build", async () => {
    // The bin is linked on install, before any build; a copy without dist/ beside it is that state.
    const { root } = workspace();
    mkdirSync(join(root, "package", "bin"), { recursive: true });
    const bin = join(root, "package", "bin", "patchbay.js");
    copyFileSync(CLI_PATH, bin);
    writeFileSync(join(root, "package", "package.json"), '{ "type": "module" }');
    const result = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const child = spawn(process.execPath, [bin, "--version"], { stdio: ["ignore", "ignore", "pipe"] });
      let stderr = "";
      child.stderr.on("data", (chunk) => {
        stderr += String(chunk);
      });
      child.on("exit", (code) => resolve({ code, stderr }));
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `patchbay: the server is not built yet (${join(root, "package", "dist", "cli.js")} is missing). ` +
        "Run `pnpm build` (or `pnpm --filter @patchbay/server build`) first.\n",
    );
  });

  it("refuses to start without credentials and explains the flags", async () => {
    const { env } = workspace();
    const { PATCHBAY_API_SECRET: _secret, ...rest } = env;
    const result = await runCli(["serve"], rest);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/PATCHBAY_API_SECRET/);
    expect(result.stderr).toBe(
      "patchbay: missing --api-secret (or PATCHBAY_API_SECRET); for development, --dev makes them up\n" +
        "(patchbay --help lists the options)\n",
    );
    const unknown = await runCli(["serve", "--bogus"], env);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/--bogus/);
    // A misspelt flag gets a suggestion, and the error is two lines, not the whole help.
    const typo = await runCli(["serve", "--prot", "9000"], env);
    expect(typo.code).toBe(2);
    expect(typo.stderr).toBe(
      "patchbay: unknown option '--prot' (did you mean --port?)\n(patchbay --help lists the options)\n",
    );
  });

  it("refuses a secret under 32 bytes in production, and --dev makes up credentials and prints them", async () => {
    const { env } = workspace();
    const short = await runCli(["serve"], { ...env, PATCHBAY_API_SECRET: "abc" });
    expect(short.code).toBe(2);
    expect(short.stderr).toContain("patchbay: the secret is 3 bytes; production needs at least 32");
    expect(short.stderr).toContain("or pass --dev");

    const { PATCHBAY_API_SECRET: _s, PATCHBAY_API_KEY: _k, ...bare } = env;
    const cli = await start(["serve", "--dev"], bare);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const printed = cli.stdout();
    const key = /PATCHBAY_API_KEY=(pk_dev_\w+)/.exec(printed)?.[1];
    const made = /PATCHBAY_API_SECRET=([0-9a-f]{64})\n/.exec(printed)?.[1];
    expect(key, printed).toBeDefined();
    expect(made, printed).toBeDefined();
    // The printed credentials are the server's: a session can be created with them.
    const res = await fetch(`${cli.url}/v1/agents/support/sessions`, {
      method: "POST",
      headers: { "x-api-key": key!, authorization: `Bearer ${made}`, "content-type": "application/json" },
      body: JSON.stringify({ userId: "u_dev" }),
    });
    expect(res.status).toBe(201);
    cli.child.kill("SIGINT");
    expect((await cli.exited).code).toBe(0);
  });

  it("names the taken port and the flag to change it, without a stack", async () => {
    const { env } = workspace();
    const first = await start(["serve"], env);
    const port = new URL(first.url).port;
    // Its own data directory: on the first one's, the data-directory lock would answer first.
    const second = await runCli(["serve", "--port", port], {
      ...env,
      PATCHBAY_DATA_DIR: `${env.PATCHBAY_DATA_DIR}-2`,
    });
    expect(second.code).toBe(2);
    expect(second.stderr).toBe(
      `patchbay: port ${port} is already in use on this machine: pass --port <n> (or PATCHBAY_PORT) for another one, or --port 0 for any free port\n`,
    );
  });

  it("ends a turn cut off by a crash as failed after the restart, with the conversation whole", async () => {
    const { env, secret } = workspace();
    const first = await start(["serve"], env);
    const token = await createUserToken(secret, "u_1");
    const locate = { name: "locate", description: "Where", parameters: { type: "object", properties: {} } };
    const page = await RawClient.open(first.wsUrl, { kind: "user", token });
    const sessionId = await page.create("support", { tools: [locate] });
    page.send({ type: "message.send", sessionId, commandId: "c_1", text: "hello" });
    await page.turnEnd("c_1");
    page.send({ type: "message.send", sessionId, commandId: "c_2", text: "where am i" });
    await page.nextOf("tool.call");
    const lastSeen = page.events(sessionId).at(-1)!.seq;
    first.child.kill("SIGKILL");
    expect((await first.exited).signal).toBe("SIGKILL");
    await page.whenClosed();

    const second = await start(["serve"], env);
    const again = await RawClient.open(second.wsUrl, { kind: "user", token });
    again.send({ type: "session.resume", requestId: "r", sessionId, afterSeq: lastSeen, tools: [locate] });
    const failed = await again.turnEnd("c_2");
    expect(failed).toMatchObject({ type: "response.failed", error: { code: "server_restart" } });
    again.send({ type: "message.send", sessionId, commandId: "c_3", text: "hello" });
    const end = await again.turnEnd("c_3");
    expect(end.type === "response.completed" && end.text).toBe("Hello from the CLI.");
    const res = await fetch(`${second.url}/v1/sessions/${sessionId}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const body = (await res.json()) as {
      conversation: { type: string; status: string; result?: { error?: { code: string } } }[];
    };
    expect(body.conversation.map((item) => `${item.type}:${item.status}`)).toEqual([
      "message:completed",
      "message:completed",
      "message:completed",
      "tool_call:failed",
      "message:completed",
      "message:completed",
    ]);
    expect(body.conversation[3]?.result?.error?.code).toBe("server_restart");
    await again.close();
    second.child.kill("SIGTERM");
    expect((await second.exited).code).toBe(0);
  });
});
