// Every code sample of docs/ and the package READMEs runs here, against a real Patchbay server on
// 127.0.0.1 (the offline scripted model stands in for a language model). TypeScript samples run
// with the built packages, one after another in one Node process (sample-runner.mjs); Python
// samples on /usr/bin/python3 with the SDK of sdks/python. A sample that cannot run says why in
// a marker before its fence (docs/samples.mjs); a sample without a valid marker fails here.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@patchbay/client";
import { createServer, type PatchbayServer, silentLogger } from "@patchbay/server";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allSamples, repoRoot, type Sample } from "../samples.mjs";

interface SampleResult {
  id: string;
  ok: boolean;
  errors: string[];
  logs: string[];
  followed: {
    reply?: string;
    call?: { status: string; result?: { outcome: string; content: { text: string } } };
    inbound?: number;
    finished?: { kind: string; error?: unknown };
    answered?: boolean;
  };
  ms: number;
}

const samples = allSamples();
const runnable = samples.filter((s) => s.mode === "run");
const typescriptSamples = runnable.filter((s) => s.lang === "ts");
const pythonSamples = runnable.filter((s) => s.lang === "python");
const out = join(repoRoot, "docs", ".samples-run");
const wrap = (name: string) => join(repoRoot, "docs", "test", "wrap", `${name}.mjs`);

/** The names a sample declares (`declare const x`, `declare function f`): the runner provides them. */
function declaredNames(source: ts.SourceFile): string[] {
  const names: string[] = [];
  for (const statement of source.statements) {
    const declared = ts.canHaveModifiers(statement)
      ? ts.getModifiers(statement)?.some((m) => m.kind === ts.SyntaxKind.DeclareKeyword)
      : false;
    if (!declared) continue;
    if (ts.isVariableStatement(statement)) {
      for (const d of statement.declarationList.declarations) names.push(d.name.getText(source));
    } else if (ts.isFunctionDeclaration(statement) && statement.name) {
      names.push(statement.name.text);
    }
  }
  return names;
}

/** A sample as a module the runner imports: its declarations bound, @patchbay/* tracked, the URL the test server's. */
function compile(sample: Sample, url: string, statusPage: string): { module: string; declared: string[] } {
  const source = ts.createSourceFile("sample.ts", sample.code, ts.ScriptTarget.ES2022, true);
  const declared = declaredNames(source);
  const js = ts.transpileModule(sample.code, {
    compilerOptions: {
      module: ts.ModuleKind.ESNext,
      target: ts.ScriptTarget.ES2022,
      verbatimModuleSyntax: false,
    },
  }).outputText;
  const bound =
    declared.length > 0 ? `const { ${declared.join(", ")} } = globalThis.__sampleFixtures;\n` : "";
  const text = (bound + js)
    .replace(
      /from "@patchbay\/(client|dispatch|server)"/g,
      (_m, name: string) => `from ${JSON.stringify(wrap(name))}`,
    )
    .replaceAll("http://127.0.0.1:8787", url)
    .replaceAll("http://127.0.0.1:4010", statusPage);
  const module = join(out, `${sample.id.replace(/[^\w.-]+/g, "_")}.mjs`);
  writeFileSync(module, `// ${sample.id}\n${text}`);
  return { module, declared };
}

/** The scripted model's rules: each `call` follow-up gets its own message, so the model calls exactly that tool. */
function rules() {
  const list: Array<{
    match: string;
    toolCalls?: Array<{ tool: string; arguments: Record<string, unknown> }>;
    reply?: string;
  }> = [];
  for (const sample of runnable) {
    const call = /^call (\w+) (.*)$/.exec(sample.followUp);
    if (!call) continue;
    const escaped = `run sample ${sample.id}`.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
    list.push({ match: `^${escaped}$`, toolCalls: [{ tool: call[1]!, arguments: JSON.parse(call[2]!) }] });
  }
  list.push({ match: "^run sample ", reply: "Done." });
  return list;
}

let server: PatchbayServer;
// The status page of docs/connectors.md's custom connector (its samples name 127.0.0.1:4010).
let statusServer: HttpServer;
let statusPage: string;
let root: string;
const apiKey = "pk_docs_samples";
const secret = "docs-samples-secret-0123456789abcdef-0123456789";
const results = new Map<string, SampleResult>();
let runnerOutput = "";

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), "patchbay-docs-"));
  statusServer = createHttpServer((request, response) => {
    const authorized = request.headers.authorization === "Bearer t";
    response.writeHead(authorized ? 200 : 401, { "content-type": "application/json" });
    response.end(JSON.stringify(authorized ? { status: "operational" } : { error: "unauthorized" }));
  });
  await new Promise<void>((resolve) => statusServer.listen(0, "127.0.0.1", resolve));
  statusPage = `http://127.0.0.1:${(statusServer.address() as AddressInfo).port}`;
  const model = { provider: "scripted" as const, rules: rules() };
  server = await createServer({
    host: "127.0.0.1",
    port: 0,
    dataDir: join(root, "data"),
    apiKey,
    secret,
    logger: silentLogger,
    env: {},
    agents: {
      support: { instructions: "Help with orders.", model },
      travel: { instructions: "Help with flights.", model },
      assistant: { instructions: "Help.", model },
    },
  });
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const manifest = {
    server: { url: server.url, apiKey, secret },
    samples: typescriptSamples.map((s) => ({
      id: s.id,
      code: s.code,
      followUp: s.followUp,
      ...compile(s, server.url, statusPage),
    })),
  };
  const manifestPath = join(root, "manifest.json");
  writeFileSync(manifestPath, JSON.stringify(manifest));
  const child = spawn(process.execPath, [join(repoRoot, "docs", "test", "sample-runner.mjs"), manifestPath], {
    cwd: join(repoRoot, "docs"),
    stdio: ["ignore", "pipe", "pipe"],
  });
  child.stdout.setEncoding("utf8");
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (chunk: string) => {
    runnerOutput += chunk;
  });
  let buffered = "";
  child.stdout.on("data", (chunk: string) => {
    buffered += chunk;
    for (let at = buffered.indexOf("\n"); at >= 0; at = buffered.indexOf("\n")) {
      const line = buffered.slice(0, at);
      buffered = buffered.slice(at + 1);
      if (line.startsWith("SAMPLE_RESULT ")) {
        const result = JSON.parse(line.slice("SAMPLE_RESULT ".length)) as SampleResult;
        results.set(result.id, result);
      } else runnerOutput += `${line}\n`;
    }
  });
  await new Promise<void>((resolve) => child.on("close", () => resolve()));
  for (const sample of pythonSamples) pythonResults.set(sample.id, await runPython(sample));
}, 240_000);

interface PythonResult {
  code: number | null;
  output: string;
  call?: { status: string; result?: { outcome: string; content: { text: string } } };
  error?: string;
}
const pythonResults = new Map<string, PythonResult>();
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function workersConnected(): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  return Number(/^patchbay_workers_connected (\d+)/m.exec(text)?.[1] ?? 0);
}

/**
 * One Python sample on /usr/bin/python3 with the SDK of sdks/python. A sample that ends runs to
 * its end; a worker runs until the test made its call, then gets SIGTERM.
 */
async function runPython(sample: Sample): Promise<PythonResult> {
  const dir = mkdtempSync(join(root, "python-"));
  const file = join(dir, "sample.py");
  const prelude = readFileSync(join(repoRoot, "docs", "test", "python-prelude.py"), "utf8");
  writeFileSync(file, `${prelude}\n${sample.code.replaceAll("http://127.0.0.1:8787", server.url)}`);
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? "/usr/bin:/bin",
    PYTHONPATH: join(repoRoot, "sdks", "python"),
    SAMPLE_WS_URL: server.url.replace(/^http/, "ws"),
    SAMPLE_API_KEY: apiKey,
    SAMPLE_API_SECRET: secret,
  };
  // As for TypeScript: the PATCHBAY_* variables only for a sample that names them.
  for (const [name, value] of [
    ["PATCHBAY_URL", server.url],
    ["PATCHBAY_API_KEY", apiKey],
    ["PATCHBAY_API_SECRET", secret],
  ] as const) {
    if (sample.code.includes(name)) env[name] = value;
  }
  const child: ChildProcess = spawn("/usr/bin/python3", [file], {
    cwd: dir,
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
  const result: PythonResult = { code: null, output };
  const call = /^call (\w+)/.exec(sample.followUp);
  if (call) {
    let connected = false;
    for (let i = 0; i < 200 && !connected && child.exitCode === null; i += 1) {
      connected = (await workersConnected()) > 0;
      if (!connected) await pause(50);
    }
    if (connected) {
      const client = new Client({ baseUrl: server.url, apiKey, secret });
      try {
        const session = await client.agent("support").sessions.create({ userId: "u_python" });
        await session.responses.create(`run sample ${sample.id}`);
        const item = session.conversation.find((i) => i.type === "tool_call" && i.name === call[1]);
        if (item?.type === "tool_call") result.call = { status: item.status, result: item.result };
      } catch (error) {
        result.error = String(error);
      } finally {
        client.close();
      }
    } else result.error = "the worker never connected";
    child.kill("SIGTERM");
  }
  const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
  result.code = await exited;
  clearTimeout(timer);
  result.output = output;
  // The next sample starts with no worker of this one still connected.
  for (let i = 0; i < 100 && (await workersConnected()) > 0; i += 1) await pause(50);
  return result;
}

afterAll(async () => {
  await server?.close();
  await new Promise((resolve) => statusServer?.close(resolve));
  if (root) rmSync(root, { recursive: true, force: true });
});

function resultOf(sample: Sample): SampleResult {
  const result = results.get(sample.id);
  if (!result)
    throw new Error(
      `the runner reported nothing for ${sample.id}; its output:\n${runnerOutput.slice(-4000)}`,
    );
  return result;
}

describe("every sample says whether it runs", () => {
  it("no sample lacks a marker or has one that does not parse", () => {
    expect(samples.filter((s) => s.mode === "undeclared").map((s) => `${s.id}: ${s.problem}`)).toEqual([]);
  });
});

/**
 * What a sample says it prints: a line that starts a statement with `console.log(...); // <JSON>`
 * (`// "invalid_arguments"`), or `// "text"; more words`.
 */
function expectedLogs(code: string): string[] {
  const expected: string[] = [];
  for (const line of code.split("\n")) {
    const match = /^(?:if \(.*\) )?console\.log\(.*\); \/\/ (.*)$/.exec(line);
    if (!match) continue;
    const comment = match[1]!;
    let value: unknown;
    try {
      value = JSON.parse(comment);
    } catch {
      const literal = /^"(?:[^"\\]|\\.)*"/.exec(comment);
      if (!literal) continue;
      value = JSON.parse(literal[0]);
    }
    expected.push(typeof value === "string" ? value : JSON.stringify(value));
  }
  return expected;
}

describe("TypeScript samples run against a real server", () => {
  it.each(typescriptSamples.map((s) => [s.id, s] as const))("%s", (_id, sample) => {
    const result = resultOf(sample);
    expect(result.errors, result.logs.join("\n")).toEqual([]);
    for (const line of expectedLogs(sample.code)) expect(result.logs).toContain(line);
    const call = /^call (\w+)/.exec(sample.followUp);
    if (call) {
      expect(result.followed.call, `the model called ${call[1]}`).toBeDefined();
      expect(result.followed.call?.result?.outcome, JSON.stringify(result.followed.call)).toBe("completed");
    }
    if (sample.followUp.startsWith("channel message")) {
      expect(result.followed.inbound, JSON.stringify(result.followed)).toBe(202);
      // The worker's handler took the message and returned without an error.
      expect(result.followed.finished, JSON.stringify(result.followed)).toMatchObject({ kind: "message" });
      expect(result.followed.finished?.error).toBeUndefined();
      if (sample.followUp === "channel message answered") expect(result.followed.answered).toBe(true);
    }
  });
});

describe("Python samples run against a real server", () => {
  it.each(pythonSamples.map((s) => [s.id, s] as const))("%s", (_id, sample) => {
    const result = pythonResults.get(sample.id);
    expect(result, "the sample ran").toBeDefined();
    expect(result?.error, result?.output).toBeUndefined();
    if (/^call /.test(sample.followUp)) {
      expect(result?.call?.result?.outcome, `${JSON.stringify(result?.call)}\n${result?.output}`).toBe(
        "completed",
      );
    } else {
      expect(result?.code, result?.output).toBe(0);
    }
  });
});
