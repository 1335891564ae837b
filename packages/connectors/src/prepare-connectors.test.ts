import { describe, expect, it } from "vitest";
import { z } from "zod";
import { builtinConnectors } from "./builtin-connectors";
import { defineConnector } from "./connector";
import { ConnectorEntriesSchema } from "./connector-entry";
import { ConnectorConfigError } from "./errors";
import { prepareConnectors } from "./prepare-connectors";

function issuesOf(entries: unknown[], env: Record<string, string> = {}) {
  const parsed = ConnectorEntriesSchema.parse(entries);
  try {
    prepareConnectors(parsed, { kinds: builtinConnectors, env });
  } catch (error) {
    expect(error).toBeInstanceOf(ConnectorConfigError);
    return (error as ConnectorConfigError).issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`);
  }
  return [];
}

describe("prepareConnectors", () => {
  it("checks each kind's config and fills in the environment", () => {
    const [prepared] = prepareConnectors(
      ConnectorEntriesSchema.parse([
        { name: "memory", mcp: { command: "npx", args: ["x"], env: { TOKEN: "${T}" } } },
      ]),
      { kinds: builtinConnectors, env: { T: "abc" } },
    );
    expect(prepared?.kind.name).toBe("mcp");
    expect(prepared?.config).toEqual({ command: "npx", args: ["x"], env: { TOKEN: "abc" } });
    expect(prepared?.entry.mcp).toEqual({ command: "npx", args: ["x"], env: { TOKEN: "${T}" } });
  });

  it("refuses an unknown kind, a missing command and an unset variable, all at once", () => {
    expect(
      issuesOf([
        { name: "a", smtp: { host: "x" } },
        { name: "b", mcp: { args: ["x"] } },
        { name: "c", mcp: { url: "https://x.test/mcp", headers: { authorization: "Bearer ${NOPE}" } } },
      ]),
    ).toEqual([
      "0.smtp: unknown connector kind 'smtp' (known: mcp, openapi)",
      "1.mcp.command: is required: give 'command' (stdio) or 'url' (Streamable HTTP)",
      "2.mcp.headers.authorization: ${NOPE} is not set in the environment",
    ]);
  });

  it("never puts a secret value in an issue", () => {
    const issues = issuesOf([{ name: "a", mcp: { url: "${URL}" } }], { URL: "not a url with secret-123" });
    expect(issues.join("\n")).not.toContain("secret-123");
    expect(issues).toEqual(["0.mcp.url: must be an http or https URL"]);
  });

  it("takes a contributor's kind", () => {
    const clock = defineConnector({
      name: "clock",
      configSchema: z.strictObject({ zone: z.string() }),
      connect: async () => ({ tools: () => [], close: async () => {} }),
    });
    const entries = ConnectorEntriesSchema.parse([{ name: "time", clock: { zone: 3 } }]);
    expect(() => prepareConnectors(entries, { kinds: [clock], env: {} })).toThrow(
      /0\.clock\.zone: Invalid input: expected string/,
    );
  });
});

describe("ConnectorEntriesSchema", () => {
  const problems = (value: unknown) => {
    const result = ConnectorEntriesSchema.safeParse(value);
    return result.success ? [] : result.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`);
  };

  it("refuses a bad allow list, a bad name, no kind, two kinds, a misspelled key and a duplicate name", () => {
    expect(problems([{ name: "e", mcp: {}, tools: { allow: "echo" } }])).toEqual([
      "0.tools.allow: Invalid input: expected array, received string",
    ]);
    expect(problems([{ name: "e", mcp: {}, tools: { allow: ["ok", "has space"] } }])).toEqual([
      "0.tools.allow.1: must be a tool name (letters, digits, '_', '-', '.', '/')",
    ]);
    expect(problems([{ name: "a_b", mcp: {} }])).toEqual(["0.name: must be 1 to 30 letters, digits or '-'"]);
    expect(problems([{ name: "a" }])).toEqual([
      "0: names no connector kind: add one key such as 'mcp:' or 'openapi:'",
    ]);
    expect(problems([{ name: "a", mcp: {}, openapi: {} }])).toEqual([
      "0.openapi: has more than one connector kind (mcp, openapi): keep one",
    ]);
    expect(problems([{ name: "a", openapi: {}, aproval: { tools: [] } }])).toEqual([
      "0.aproval: unknown key 'aproval' (did you mean 'approval'?)",
    ]);
    expect(problems([{ name: "a", mcp: {}, tool: {}, timeout: 5 }])).toEqual([
      "0.tool: unknown key 'tool' (did you mean 'tools'?)",
      "0.timeout: unknown key 'timeout' (did you mean 'timeout_ms'?)",
    ]);
    expect(problems([{ name: "a", aproval: {} }])).toEqual([
      "0.aproval: unknown key 'aproval' (did you mean 'approval'?)",
      "0: names no connector kind: add one key such as 'mcp:' or 'openapi:'",
    ]);
    // A kind whose name is near a common key's is still a kind.
    expect(problems([{ name: "a", time: {} }])).toEqual([]);
    expect(
      problems([
        { name: "a", mcp: {} },
        { name: "a", mcp: {} },
      ]),
    ).toEqual(["1.name: another connector is already named 'a'"]);
  });
});
