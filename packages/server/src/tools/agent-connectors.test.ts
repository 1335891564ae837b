import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { AgentConfigError, loadAgentConfigs, parseAgentConfig } from "../config/agent-config";
import { silentLogger } from "../observability/logger";
import { prepareAgentConnectors, startAgentConnectors } from "./agent-connectors";

const MODEL = "model:\n  provider: scripted\n";
const root = mkdtempSync(join(tmpdir(), "pb-agent-conn-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function refusal(yaml: string, env: Record<string, string> = {}): Promise<string> {
  const file = `agents/support.yaml`;
  try {
    const agent = parseAgentConfig("support", yaml, file);
    const sets = await startAgentConnectors(prepareAgentConnectors([agent], { env }), {
      logger: silentLogger,
    });
    for (const set of sets.values()) await set.close();
  } catch (error) {
    expect(error).toBeInstanceOf(AgentConfigError);
    return (error as Error).message;
  }
  throw new Error("the config was accepted");
}

describe("connectors in the agent YAML", () => {
  it("refuses an unknown kind with the file, line and field", async () => {
    const yaml = `${MODEL}connectors:\n  - name: mail\n    smtp:\n      host: x\n`;
    expect(await refusal(yaml)).toBe(
      "invalid agent config:\nagents/support.yaml:5:5: connectors.0.smtp: unknown connector kind 'smtp' (known: mcp, openapi)",
    );
  });

  it("refuses a missing command", async () => {
    const yaml = `${MODEL}connectors:\n  - name: everything\n    mcp:\n      args: ["x"]\n`;
    expect(await refusal(yaml)).toBe(
      "invalid agent config:\nagents/support.yaml:6:7: connectors.0.mcp.command: is required: give 'command' (stdio) or 'url' (Streamable HTTP)",
    );
  });

  it("refuses a bad allow list", async () => {
    const yaml = `${MODEL}connectors:\n  - name: everything\n    mcp: { command: npx }\n    tools: { allow: echo }\n`;
    expect(await refusal(yaml)).toBe(
      "invalid agent config:\nagents/support.yaml:6:21: connectors.0.tools.allow: Invalid input: expected array, received string",
    );
  });

  it("refuses an unset ${VAR} and never shows set values", async () => {
    const yaml = `${MODEL}connectors:\n  - name: api\n    mcp:\n      url: https://mcp.example.com/mcp\n      headers:\n        authorization: "Bearer \${API_TOKEN}"\n        x-team: "\${TEAM}"\n`;
    const message = await refusal(yaml, { TEAM: "team-secret-value" });
    expect(message).toBe(
      "invalid agent config:\nagents/support.yaml:8:24: connectors.0.mcp.headers.authorization: ${API_TOKEN} is not set in the environment",
    );
    expect(message).not.toContain("team-secret-value");
  });

  it("keeps the written config (names, not values) on the agent, and reads connectors from agent files", () => {
    mkdirSync(join(root, "agents"), { recursive: true });
    writeFileSync(
      join(root, "agents", "support.yaml"),
      `${MODEL}connectors:\n  - name: memory\n    mcp:\n      command: npx\n      args: ["-y", "@modelcontextprotocol/server-memory"]\n      env: { TOKEN: "\${T}" }\n    timeout_ms: 5000\n`,
    );
    const agent = loadAgentConfigs(root).get("support")!;
    expect(agent.connectors).toEqual([
      {
        name: "memory",
        mcp: { command: "npx", args: ["-y", "@modelcontextprotocol/server-memory"], env: { TOKEN: "${T}" } },
        timeout_ms: 5000,
      },
    ]);
  });
});
