import { ConnectorConfigError } from "@patchbay/connectors";
import { describe, expect, it } from "vitest";
import { Dispatch } from "./dispatch";

const options = { capacity: 1, url: "http://127.0.0.1:9", apiKey: "pk", secret: "s" };

describe("dispatch.connect", () => {
  it("refuses bad entries given in code, naming the field", async () => {
    const dispatch = new Dispatch(options);
    const error = await dispatch
      .connect("support", [
        { name: "x", mcp: { args: ["a"] } },
        { name: "y", mcp: { command: "npx" }, tools: { allow: "echo" } },
      ])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ConnectorConfigError);
    expect((error as Error).message).toBe(
      "invalid connector config:\n1.tools.allow: Invalid input: expected array, received string",
    );
    const unset = await dispatch
      .connect("support", [{ name: "x", mcp: { url: "${MCP_URL}" } }], { env: {} })
      .catch((e: unknown) => e);
    expect((unset as Error).message).toBe(
      "invalid connector config:\n0.mcp.url: ${MCP_URL} is not set in the environment",
    );
    await dispatch.stop();
  });

  it("hosts a connector that is down with its allowed tools answering why, and closes on stop", async () => {
    const dispatch = new Dispatch(options);
    const set = await dispatch.connect("support", [
      { name: "gone", mcp: { command: "/nonexistent/mcp-server" }, tools: { allow: ["ping"] } },
    ]);
    expect(set.status()).toEqual([
      expect.objectContaining({ name: "gone", state: "down", tools: ["gone__ping"] }),
    ]);
    expect(set.tools.names()).toEqual(["gone__ping"]);
    await dispatch.stop();
    expect(set.tools.names()).toEqual([]);
  });
});
