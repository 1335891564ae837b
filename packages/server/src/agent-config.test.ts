import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
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
    expect(error.issues[0]).toMatchObject({ path: "model.delayMs", line: 3 });
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
});
