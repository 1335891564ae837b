import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { ToolExecutor } from "@patchbay/tools";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type RestartableMcpServer,
  startRestartableMcpServer,
  type UnknownSessionAnswer,
} from "../../test/fixtures/mcp-http-server";
import { ConnectorEntriesSchema } from "../connector-entry";
import { ConnectorSet } from "../connector-set";
import { prepareConnectors } from "../prepare-connectors";
import { mcpConnector } from "./mcp-connector";

const FIXTURE = fileURLToPath(new URL("../../test/fixtures/mcp-fixture.mjs", import.meta.url));
const RAW_FIXTURE = fileURLToPath(new URL("../../test/fixtures/mcp-raw-fixture.mjs", import.meta.url));
const HANG_FIXTURE = fileURLToPath(new URL("../../test/fixtures/mcp-hang-fixture.mjs", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "pb-mcp-"));
const cancelLog = join(dir, "cancelled.log");
const sets: ConnectorSet[] = [];

async function start(
  mcp: Record<string, unknown>,
  extra: Record<string, unknown> = {},
  env: Record<string, string> = {},
) {
  const entries = ConnectorEntriesSchema.parse([{ name: "fx", mcp, approval: { tools: [] }, ...extra }]);
  const set = await ConnectorSet.start(prepareConnectors(entries, { kinds: [mcpConnector], env }), {
    startTimeoutMs: 10_000,
  });
  sets.push(set);
  return set;
}

const stdio = (env: Record<string, string> = {}) => ({
  command: process.execPath,
  args: [FIXTURE],
  env: { CANCEL_LOG: cancelLog, ...env },
});

async function until<T>(read: () => T | undefined, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const value = read();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

afterEach(async () => {
  await Promise.all(sets.splice(0).map((set) => set.close()));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the MCP connector over stdio", () => {
  it("offers the server's tools by their offered names and maps results", async () => {
    const set = await start(stdio());
    expect(set.status()).toEqual([expect.objectContaining({ name: "fx", kind: "mcp", state: "up" })]);
    expect(set.tools.names()).toEqual(
      expect.arrayContaining(["fx__add", "fx__fail", "fx__image", "fx__slow"]),
    );
    const executor = new ToolExecutor({ tools: set.tools });
    const sum = await executor.execute({ id: "a1", name: "fx__add", arguments: { a: 2, b: 40 } });
    expect(sum).toMatchObject({ outcome: "completed", content: { text: '{"sum":42}', images: [] } });
    const failed = await executor.execute({ id: "a2", name: "fx__fail", arguments: {} });
    expect(failed).toMatchObject({
      outcome: "failed",
      content: { text: "the fixture refused" },
      error: { code: "mcp_tool_error" },
    });
    const image = await executor.execute({ id: "a3", name: "fx__image", arguments: {} });
    expect(image.content.text).toBe("a pixel");
    expect(image.content.images).toEqual([expect.objectContaining({ type: "image", mimeType: "image/png" })]);
    const invalid = await executor.execute({ id: "a4", name: "fx__add", arguments: { a: "x" } });
    expect(invalid.outcome).toBe("invalid_arguments");
  });

  it("stops a server that hangs at startup when the set closes, past the start timeout", async () => {
    const pidFile = join(dir, "hang.pid");
    const entries = ConnectorEntriesSchema.parse([
      { name: "hang", mcp: { command: process.execPath, args: [HANG_FIXTURE], env: { PID_FILE: pidFile } } },
    ]);
    const set = await ConnectorSet.start(prepareConnectors(entries, { kinds: [mcpConnector], env: {} }), {
      startTimeoutMs: 300,
    });
    const pid = Number(await until(() => (existsSync(pidFile) ? readFileSync(pidFile, "utf8") : undefined)));
    try {
      expect(set.status()[0]).toMatchObject({ state: "down", reason: "did not connect within 300 ms" });
      expect(process.kill(pid, 0)).toBe(true);
      await set.close();
      expect(() => process.kill(pid, 0)).toThrow(expect.objectContaining({ code: "ESRCH" }));
    } finally {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
    }
  }, 20_000);

  it("cuts a long result at max_response_chars (default 100 000) and says so", async () => {
    const set = await start(stdio());
    const executor = new ToolExecutor({ tools: set.tools });
    const big = await executor.execute({ id: "c1", name: "fx__big", arguments: { chars: 3_000_000 } });
    expect(big.outcome).toBe("completed");
    expect(big.content.text).toBe(`${"x".repeat(100_000)}\n[cut: the response had 3000000 characters]`);
    const small = await executor.execute({ id: "c2", name: "fx__big", arguments: { chars: 500 } });
    expect(small.content.text).toBe("x".repeat(500));

    const capped = await start({ ...stdio(), max_response_chars: 1000 });
    const cut = await new ToolExecutor({ tools: capped.tools }).execute({
      id: "c3",
      name: "fx__big",
      arguments: { chars: 5000 },
    });
    expect(cut.content.text).toBe(`${"x".repeat(1000)}\n[cut: the response had 5000 characters]`);
  });

  it("turns progress notifications into progress, and an interrupt into notifications/cancelled", async () => {
    const set = await start(stdio());
    const executor = new ToolExecutor({ tools: set.tools });
    const progress: string[] = [];
    executor.on("progress", ({ text }) => progress.push(text));
    const done = await executor.execute({ id: "p1", name: "fx__slow", arguments: { ms: 250 } });
    expect(done.content.text).toBe("waited 250 ms");
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.every((text) => /^step [1-5]$/.test(text))).toBe(true);

    const running = executor.execute({ id: "p2", name: "fx__slow", arguments: { ms: 3000 } });
    await until(() => progress.length > 5 || undefined);
    expect(executor.cancel("p2")).toBe(true);
    expect((await running).outcome).toBe("cancelled");
    await until(() => {
      try {
        return readFileSync(cancelLog, "utf8").includes("cancelled");
      } catch {
        return undefined;
      }
    });
  });

  it("times a call out at timeout_ms and cancels it at the server", async () => {
    rmSync(cancelLog, { force: true });
    const set = await start(stdio(), { timeout_ms: 300 });
    const executor = new ToolExecutor({ tools: set.tools });
    const result = await executor.execute({ id: "t1", name: "fx__slow", arguments: { ms: 3000 } });
    expect(result.outcome).toBe("timed_out");
    await until(() => {
      try {
        return readFileSync(cancelLog, "utf8").includes("cancelled");
      } catch {
        return undefined;
      }
    });
  });

  it("refreshes the tools on list_changed", async () => {
    const set = await start(stdio());
    expect(set.tools.has("fx__extra")).toBe(false);
    await new ToolExecutor({ tools: set.tools }).execute({ id: "g1", name: "fx__grow", arguments: {} });
    await until(() => set.tools.has("fx__extra") || undefined);
    expect(
      (await new ToolExecutor({ tools: set.tools }).execute({ id: "g2", name: "fx__extra", arguments: {} }))
        .content.text,
    ).toBe("extra here");
  });

  it("restarts a server that exited; calls fail clearly while it is down", async () => {
    // A 1 s first backoff keeps the server down long enough to call it meanwhile.
    const set = await start({ ...stdio(), restart_backoff_ms: 1000 }, { tools: { deny: ["grow"] } });
    const executor = new ToolExecutor({ tools: set.tools });
    await executor.execute({ id: "c1", name: "fx__crash", arguments: {} });
    await until(() => set.status()[0]?.state === "down" || undefined);
    expect(set.status()[0]?.reason).toBe("the MCP server process exited");
    const whileDown = await executor.execute({ id: "c2", name: "fx__add", arguments: { a: 1, b: 1 } });
    expect(whileDown.outcome).toBe("failed");
    expect(whileDown.content.text).toMatch(
      /^The fx service is unavailable right now \(the MCP server process exited\)/,
    );
    await until(() => set.status()[0]?.state === "up" || undefined);
    expect(
      (await executor.execute({ id: "c3", name: "fx__add", arguments: { a: 1, b: 2 } })).content.text,
    ).toBe('{"sum":3}');
    expect(set.tools.has("fx__grow")).toBe(false);
  });

  it("passes env (with ${VAR} filled) to the server and reports a command that cannot start as down", async () => {
    const set = await start(
      { ...stdio(), env: { FIXTURE_SECRET: "${FX_SECRET}" } },
      {},
      { FX_SECRET: "from-env" },
    );
    const executor = new ToolExecutor({ tools: set.tools });
    // The server echoes the value it got: the model reads it blanked, as every filled-in secret.
    expect((await executor.execute({ id: "w1", name: "fx__whoami", arguments: {} })).content.text).toBe(
      "***",
    );

    const broken = await start({ command: join(dir, "no-such-server") }, { tools: { allow: ["add"] } });
    const [status] = broken.status();
    expect(status).toMatchObject({ name: "fx", state: "down", tools: ["fx__add"] });
    expect(status?.reason).toMatch(/^could not connect: .*ENOENT/);
    const answer = await new ToolExecutor({ tools: broken.tools }).execute({
      id: "b1",
      name: "fx__add",
      arguments: {},
    });
    expect(answer.content.text).toMatch(/^The fx service is unavailable right now \(could not connect: /);
  });
});

describe("the MCP connector and results the MCP schema does not allow", () => {
  // The connector hands the SDK a result schema that checks only for an object, and checks every
  // field it maps itself: each malformed result must fail the call, naming what was wrong.
  it.each([
    ["text-not-string", "content[1].text is not a string"],
    ["unknown-type", "content[0].type is not one of text, image, audio, resource, resource_link"],
    ["image-without-type", "content[0].mimeType is not a string"],
    ["resource-without-contents", "content[0].resource has neither a string text nor a string blob"],
    ["block-not-object", "content[0] is not an object"],
    ["content-not-array", "content is not an array"],
    ["structured-not-object", "structuredContent is not an object"],
    ["is-error-not-boolean", "isError is not a boolean"],
  ])("refuses %s", async (shape, problem) => {
    const set = await start({ command: process.execPath, args: [RAW_FIXTURE] });
    const result = await new ToolExecutor({ tools: set.tools }).execute({
      id: `m-${shape}`,
      name: "fx__answer",
      arguments: { case: shape },
    });
    expect(result).toMatchObject({ outcome: "failed", error: { code: "mcp_call_failed" } });
    expect(result.content.text).toBe(
      `The fx service could not run answer: its result is malformed: ${problem}`,
    );
  });

  // The SDK's Protocol drops a response it cannot route, so without the connector's check the
  // call would wait for its timeout (30 s here): each must fail at once, saying what was wrong.
  it.each([
    ["result-not-object", "result is not an object"],
    ["result-null", "result is not an object"],
    ["error-without-code", "error.code is not an integer"],
    ["neither-result-nor-error", "it has neither result nor error"],
  ])("fails a call answered with a response the SDK cannot route: %s", async (shape, problem) => {
    const set = await start({ command: process.execPath, args: [RAW_FIXTURE] }, { timeout_ms: 30_000 });
    const executor = new ToolExecutor({ tools: set.tools });
    const result = await executor.execute({
      id: `w-${shape}`,
      name: "fx__answer",
      arguments: { case: shape },
    });
    expect(result).toMatchObject({ outcome: "failed", error: { code: "mcp_call_failed" } });
    expect(result.content.text).toBe(
      `The fx service could not run answer: MCP error -32603: its response is malformed: ${problem}`,
    );
    // The connection goes on answering.
    const ok = await executor.execute({ id: `w-${shape}-ok`, name: "fx__answer", arguments: { case: "ok" } });
    expect(ok).toMatchObject({ outcome: "completed", content: { text: "fine\n[r](file:///r)" } });
  });

  it("takes a good result that carries a key JSON-RPC does not define", async () => {
    const set = await start({ command: process.execPath, args: [RAW_FIXTURE] }, { timeout_ms: 30_000 });
    const result = await new ToolExecutor({ tools: set.tools }).execute({
      id: "x1",
      name: "fx__answer",
      arguments: { case: "extra-key" },
    });
    expect(result).toMatchObject({ outcome: "completed", content: { text: "fine\n[r](file:///r)" } });
  });

  it("reads the answer past lines that are not JSON-RPC messages, split across reads", async () => {
    // The connector's stdio reader leaves checking messages to the SDK's Protocol: a line that is
    // not JSON, or not a JSON-RPC 2.0 message, is reported and dropped, never taken as an answer.
    const set = await start({ command: process.execPath, args: [RAW_FIXTURE] });
    const executor = new ToolExecutor({ tools: set.tools });
    const result = await executor.execute({
      id: "r1",
      name: "fx__answer",
      arguments: { case: "noise-first" },
    });
    expect(result).toMatchObject({ outcome: "completed", content: { text: "fine\n[r](file:///r)" } });
    const next = await executor.execute({ id: "r2", name: "fx__answer", arguments: { case: "ok" } });
    expect(next).toMatchObject({ outcome: "completed", content: { text: "fine\n[r](file:///r)" } });
  });

  it("still checks structured content against the tool's output schema", async () => {
    const set = await start({ command: process.execPath, args: [RAW_FIXTURE] });
    const executor = new ToolExecutor({ tools: set.tools });
    const typed = await executor.execute({ id: "n1", name: "fx__typed", arguments: {} });
    expect(typed).toMatchObject({ outcome: "failed", error: { code: "mcp_call_failed" } });
    expect(typed.content.text).toMatch(/does not match the tool's output schema/);
    // The same connection still answers a well-formed result.
    const ok = await executor.execute({ id: "n2", name: "fx__answer", arguments: { case: "ok" } });
    expect(ok).toMatchObject({ outcome: "completed", content: { text: "fine\n[r](file:///r)" } });
  });
});

describe("the MCP connector over Streamable HTTP", () => {
  let child: ChildProcess;
  let url: string;
  beforeAll(async () => {
    child = spawn(process.execPath, [FIXTURE, "http"], { stdio: ["ignore", "pipe", "inherit"] });
    url = await new Promise<string>((resolve, reject) => {
      child.stdout!.once("data", (chunk: Buffer) => resolve(JSON.parse(chunk.toString()).url));
      child.once("exit", (code) => reject(new Error(`fixture exited ${code}`)));
    });
  });
  afterAll(() => {
    child.kill();
  });

  it("connects with headers from the environment and calls tools", async () => {
    const set = await start(
      { url, headers: { authorization: "Bearer ${FX_TOKEN}" } },
      {},
      { FX_TOKEN: "fixture-token" },
    );
    expect(set.status()[0]?.state).toBe("up");
    const executor = new ToolExecutor({ tools: set.tools });
    const progress: string[] = [];
    executor.on("progress", ({ text }) => progress.push(text));
    expect(
      (await executor.execute({ id: "h1", name: "fx__add", arguments: { a: 1, b: 2 } })).content.text,
    ).toBe('{"sum":3}');
    expect(
      (await executor.execute({ id: "h2", name: "fx__slow", arguments: { ms: 200 } })).content.text,
    ).toBe("waited 200 ms");
    expect(progress.length).toBeGreaterThan(0);
  });

  it("reports a server that refuses the credentials as down", async () => {
    const set = await start({ url, headers: { authorization: "Bearer wrong" } });
    expect(set.status()[0]).toMatchObject({ state: "down" });
    expect(set.status()[0]?.reason).toMatch(/^could not connect: /);
  });
});

describe("the MCP connector over Streamable HTTP, when the server restarts or goes away", () => {
  const servers: RestartableMcpServer[] = [];
  afterEach(async () => {
    // The sets first (the outer afterEach runs after this one), so no reconnect races the stop.
    await Promise.all(sets.splice(0).map((set) => set.close()));
    await Promise.all(servers.splice(0).map((server) => server.stop()));
  });
  const serve = async (unknownSession?: UnknownSessionAnswer) => {
    const server = await startRestartableMcpServer(unknownSession);
    servers.push(server);
    return server;
  };
  const http = (url: string) => ({ url, restart_backoff_ms: 50, max_restart_backoff_ms: 200 });

  it.each([
    [404, "Session not found"],
    [400, "No valid session ID provided"],
  ] as const)(
    "opens a new session when the restarted server answers %i (%s), and runs the call once on it",
    async (answer, _said) => {
      const server = await serve(answer);
      const set = await start(http(server.url));
      const executor = new ToolExecutor({ tools: set.tools });
      const first = await executor.execute({ id: "r1", name: "fx__add", arguments: { a: 1, b: 2 } });
      expect(first.content.text).toBe('{"sum":3}');

      await server.stop();
      await server.start();
      const again = await executor.execute({ id: "r2", name: "fx__add", arguments: { a: 2, b: 3 } });
      expect(again).toMatchObject({ outcome: "completed", content: { text: '{"sum":5}' } });
      expect(server.runs.get("add")).toBe(2);
      expect(server.sessions()).toBe(2);
      expect(set.status()[0]).toMatchObject({ state: "up", tools: ["fx__add", "fx__hang"] });
      const third = await executor.execute({ id: "r3", name: "fx__add", arguments: { a: 3, b: 4 } });
      expect(third.content.text).toBe('{"sum":7}');
      expect(server.sessions()).toBe(2);
    },
  );

  it("fails calls clearly while the server is down, reports it down, and comes back when it is up again", async () => {
    const server = await serve();
    const set = await start(http(server.url));
    const executor = new ToolExecutor({ tools: set.tools });
    expect(
      (await executor.execute({ id: "d1", name: "fx__add", arguments: { a: 1, b: 1 } })).content.text,
    ).toBe('{"sum":2}');

    await server.stop();
    const refused = await executor.execute({ id: "d2", name: "fx__add", arguments: { a: 1, b: 2 } });
    expect(refused.outcome).toBe("failed");
    expect(refused.content.text).toMatch(
      /the MCP server cannot be reached \(connect ECONNREFUSED 127\.0\.0\.1:\d+\)/,
    );
    expect(set.status()[0]).toMatchObject({ state: "down" });
    expect(set.status()[0]?.reason).toMatch(/cannot be reached/);
    const whileDown = await executor.execute({ id: "d3", name: "fx__add", arguments: { a: 1, b: 3 } });
    expect(whileDown.content.text).toMatch(/^The fx service is unavailable right now \(.*cannot be reached/);
    expect(server.runs.get("add")).toBe(1);

    await server.start();
    await until(() => set.status()[0]?.state === "up" || undefined);
    const back = await executor.execute({ id: "d4", name: "fx__add", arguments: { a: 2, b: 2 } });
    expect(back).toMatchObject({ outcome: "completed", content: { text: '{"sum":4}' } });
    expect(server.runs.get("add")).toBe(2);
  });

  it("fails a call the server may have run before it went away, and does not run it again", async () => {
    const server = await serve();
    const set = await start(http(server.url), { timeout_ms: 10_000 });
    const executor = new ToolExecutor({ tools: set.tools });
    // The server stops once the call runs there (its progress came back): the response never will.
    executor.on("progress", () => void server.stop());
    const started = Date.now();
    const cut = await executor.execute({ id: "h1", name: "fx__hang", arguments: {} });
    expect(cut).toMatchObject({ outcome: "failed", error: { code: "mcp_call_failed" } });
    expect(cut.content.text).toBe(
      "The fx service could not run hang: the connection to the MCP server was lost before it answered",
    );
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(set.status()[0]).toMatchObject({ state: "down" });

    await server.start();
    await until(() => set.status()[0]?.state === "up" || undefined);
    expect(
      (await executor.execute({ id: "h2", name: "fx__add", arguments: { a: 5, b: 5 } })).content.text,
    ).toBe('{"sum":10}');
    expect(server.runs.get("hang")).toBe(1);
  });
});
