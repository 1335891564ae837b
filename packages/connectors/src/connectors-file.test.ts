import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { builtinConnectors } from "./builtin-connectors";
import { readConnectorsFile } from "./connectors-file";
import { ConnectorConfigError } from "./errors";

const dir = mkdtempSync(join(tmpdir(), "pb-conn-file-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function write(text: string): string {
  const file = join(dir, `c${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, text);
  return file;
}

describe("readConnectorsFile (a worker's own YAML)", () => {
  it("prepares the entries with the environment filled in", () => {
    const file = write(
      "connectors:\n  - name: memory\n    mcp:\n      command: npx\n      env: { MEMORY_FILE_PATH: '${MEM}' }\n",
    );
    const [prepared] = readConnectorsFile(file, { kinds: builtinConnectors, env: { MEM: "/tmp/m.json" } });
    expect(prepared?.config).toEqual({ command: "npx", env: { MEMORY_FILE_PATH: "/tmp/m.json" } });
  });

  it("names the file, line and field of every problem", () => {
    const file = write(
      "connectors:\n  - name: a\n    ftp: {}\n  - name: b\n    mcp:\n      url: '${MISSING}'\n  - name: c\n    mcp: { command: x }\n    tools: { deny: 3 }\n",
    );
    let error: unknown;
    try {
      readConnectorsFile(file, { kinds: builtinConnectors, env: {} });
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConnectorConfigError);
    // The shape problem is found first; the kind and env problems once the shape is right.
    expect((error as Error).message).toBe(
      `invalid connector config:\n${file}:9:20: connectors.2.tools.deny: Invalid input: expected array, received number`,
    );
    const fixed = write(
      "connectors:\n  - name: a\n    ftp: {}\n  - name: b\n    mcp:\n      url: '${MISSING}'\n",
    );
    expect(() => readConnectorsFile(fixed, { kinds: builtinConnectors, env: {} })).toThrow(
      `invalid connector config:\n${fixed}:3:5: connectors.0.ftp: unknown connector kind 'ftp' (known: mcp, openapi)\n${fixed}:6:12: connectors.1.mcp.url: \${MISSING} is not set in the environment`,
    );
  });

  it("reports a YAML syntax error with its line", () => {
    const file = write("connectors:\n  - name: a\n    mcp: {command: x\n");
    expect(() => readConnectorsFile(file, { kinds: builtinConnectors, env: {} })).toThrow(
      new RegExp(`^invalid connector config:\\n${file}:\\d+:\\d+: `),
    );
  });
});
