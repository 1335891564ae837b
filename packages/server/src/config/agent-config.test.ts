import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { AgentConfigError, defineAgent, loadAgentConfigs, parseAgentConfig } from "./agent-config";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function configDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "patchbay-config-"));
  dirs.push(dir);
  mkdirSync(join(dir, "agents"));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, "agents", name), text);
  return dir;
}

function errorOf(fn: () => unknown): AgentConfigError {
  try {
    fn();
  } catch (error) {
    if (error instanceof AgentConfigError) return error;
    throw error;
  }
  throw new Error("expected an AgentConfigError");
}

describe("agent config", () => {
  it("reads a file with defaults and the seed's dispatch block", () => {
    const dir = configDir({
      "support.yaml": [
        "name: Stream product",
        "instructions: Be brief.",
        "mode: text",
        "model:",
        "  provider: scripted",
        "dispatch:",
        "  incoming_call: enabled",
        "  text: enabled",
        "",
      ].join("\n"),
    });
    const agent = loadAgentConfigs(dir).get("support")!;
    expect(agent).toMatchObject({
      id: "support",
      name: "Stream product",
      instructions: "Be brief.",
      mode: "text",
      maxToolRounds: 8,
      pageToolTimeoutMs: 120_000,
      hostedToolTimeoutMs: 120_000,
      serverToolTimeoutMs: 120_000,
      toolCancelGraceMs: 2_000,
      hostedCallConversationItems: 50,
      approvalTimeoutMs: 300_000,
      maxConcurrentToolCalls: 16,
      dispatch: { text: true, incomingCall: true },
    });
    expect(agent.model.provider).toBe("scripted");
  });

  it("names the file, the line and the field of a value out of range", () => {
    const dir = configDir({
      "support.yaml": "instructions: hi\nmodel:\n  provider: scripted\nmax_tool_rounds: 0\n",
    });
    const error = errorOf(() => loadAgentConfigs(dir));
    expect(error.file).toBe(join(dir, "agents", "support.yaml"));
    expect(error.issues[0]).toMatchObject({ path: "max_tool_rounds", line: 4 });
    expect(error.message).toContain(`${join(dir, "agents", "support.yaml")}:4:`);
    expect(error.message).toContain("max_tool_rounds: ");
  });

  it("points at an unknown key itself", () => {
    const error = errorOf(() =>
      parseAgentConfig("a", "model:\n  provider: scripted\npage_tool_timeout: 5\n", "agents/a.yaml"),
    );
    expect(error.issues[0]).toMatchObject({ path: "page_tool_timeout", line: 3, column: 1 });
  });

  it("points at a nested field of the model block", () => {
    const error = errorOf(() =>
      parseAgentConfig("a", "model:\n  provider: scripted\n  delayMs: -1\n", "agents/a.yaml"),
    );
    expect(error.issues[0]).toMatchObject({ path: "model.delay_ms", line: 3 });
  });

  it("reports a missing required key at the mapping that lacks it", () => {
    const error = errorOf(() => parseAgentConfig("a", "instructions: hi\n", "agents/a.yaml"));
    expect(error.issues[0]?.path).toBe("model");
    expect(error.issues[0]?.line).toBe(1);
  });

  it("reports YAML syntax errors with their line", () => {
    const error = errorOf(() =>
      parseAgentConfig("a", "model:\n  provider: scripted\ninstructions: [unclosed\n", "agents/a.yaml"),
    );
    expect(error.issues[0]?.line).toBeGreaterThanOrEqual(3);
    expect(error.message).toMatch(/^invalid agent config:\nagents\/a\.yaml:\d+:\d+: /);
  });

  it("refuses a mode other than text and a bad dispatch toggle", () => {
    const error = errorOf(() =>
      parseAgentConfig(
        "a",
        "model:\n  provider: scripted\nmode: voice\ndispatch:\n  text: on\n",
        "agents/a.yaml",
      ),
    );
    expect(error.issues.map((issue) => [issue.path, issue.line])).toEqual([
      ["mode", 3],
      ["dispatch.text", 5],
    ]);
  });

  it("validates agents given in code with field paths", () => {
    expect(defineAgent("ok", { model: { provider: "scripted" } }).name).toBe("ok");
    const error = errorOf(() => defineAgent("bad id!", { model: { provider: "scripted" } }));
    expect(error.message).toContain("agent id 'bad id!'");
    const typo = errorOf(() => defineAgent("x", { model: { provider: "nope" } } as never));
    expect(typo.issues[0]?.path).toBe("model.provider");
  });

  it("has no agents when the directory has no agents folder, and ignores other files", () => {
    const empty = mkdtempSync(join(tmpdir(), "patchbay-config-"));
    dirs.push(empty);
    expect(loadAgentConfigs(empty).size).toBe(0);
    const dir = configDir({ "README.md": "# notes", "a.yml": "model:\n  provider: scripted\n" });
    expect([...loadAgentConfigs(dir).keys()]).toEqual(["a"]);
  });

  it("reads snake_case keys in the model block and warns, with file and line, for old camelCase ones", () => {
    const snake = [
      "model:",
      "  provider: openai",
      "  model: llama3.1",
      "  base_url: http://127.0.0.1:11434/v1",
      "  headers: { X-Team: agents }",
    ].join("\n");
    const warnings: string[] = [];
    const agent = parseAgentConfig("a", snake, "agents/a.yaml", { warn: (m) => warnings.push(m) });
    expect(agent.model).toMatchObject({
      baseURL: "http://127.0.0.1:11434/v1",
      headers: { "X-Team": "agents" },
    });
    expect(warnings).toEqual([]);

    const camel = [
      "maxToolRounds: 3",
      "model:",
      "  provider: scripted",
      "  rules:",
      "    - match: hi",
      "      toolCalls: [{ tool: greet, arguments: { fullName: x } }]",
      "      reply: done",
    ].join("\n");
    const old = parseAgentConfig("b", camel, "agents/b.yaml", { warn: (m) => warnings.push(m) });
    expect(old.maxToolRounds).toBe(3);
    expect(old.model).toMatchObject({
      rules: [{ toolCalls: [{ tool: "greet", arguments: { fullName: "x" } }] }],
    });
    expect(warnings).toEqual([
      "agents/b.yaml:1:1: maxToolRounds: camelCase keys are deprecated, write max_tool_rounds",
      "agents/b.yaml:6:7: model.rules.0.toolCalls: camelCase keys are deprecated, write tool_calls",
    ]);
  });

  it("names the closest known key for an unknown one, at its line", () => {
    const error = errorOf(() =>
      parseAgentConfig(
        "a",
        "max_tool_round: 3\nmodel:\n  provider: openai\n  model: m\n  base_ulr: http://x.invalid\n  zzz: 1\n",
        "agents/a.yaml",
      ),
    );
    expect(error.issues.map(({ path, message, line }) => [path, message, line])).toEqual([
      ["model.base_ulr", "unknown key (did you mean 'base_url'?)", 5],
      ["model.zzz", "unknown key", 6],
      ["max_tool_round", "unknown key (did you mean 'max_tool_rounds'?)", 1],
    ]);
  });

  it("reads every model: sample of docs/models.md without a deprecation warning", () => {
    const doc = readFileSync(new URL("../../../../docs/models.md", import.meta.url), "utf8");
    const samples = [...doc.matchAll(/```yaml\n([\s\S]*?)```/g)]
      .map((m) => m[1]!)
      .filter((y) => /^model:/m.test(y));
    expect(samples.length).toBeGreaterThan(5);
    for (const [i, text] of samples.entries()) {
      const warnings: string[] = [];
      parseAgentConfig("sample", text, `docs/models.md#${i}`, { warn: (m) => warnings.push(m) });
      expect(warnings).toEqual([]);
    }
  });
});
