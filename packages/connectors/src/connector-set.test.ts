import { ToolError, ToolExecutor, ToolOutput, Tools } from "@patchbay/tools";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { type ConnectorContext, type ConnectorTool, defineConnector } from "./connector";
import { ConnectorEntriesSchema } from "./connector-entry";
import { ConnectorSet } from "./connector-set";
import { prepareConnectors } from "./prepare-connectors";

/** A connector kind driven by the test: it hands out its context and a mutable tool list. */
function controllable() {
  const state: { context?: ConnectorContext; tools: ConnectorTool[]; fail?: string } = { tools: [] };
  const kind = defineConnector({
    name: "fake",
    configSchema: z.strictObject({ key: z.string().optional() }),
    async connect(config, context) {
      state.context = context;
      if (state.fail) throw new Error(state.fail.replace("KEY", config.key ?? ""));
      return { tools: () => state.tools, close: async () => {} };
    },
  });
  return { kind, state };
}

const tool = (name: string, run: ConnectorTool["run"] = () => name): ConnectorTool => ({
  name,
  description: `The ${name} tool`,
  inputSchema: { type: "object", properties: {} },
  annotations: { readOnlyHint: true },
  run,
});

async function start(
  kind: ReturnType<typeof controllable>["kind"],
  entry: Record<string, unknown>,
  env: Record<string, string> = {},
  tools?: Tools,
) {
  const entries = ConnectorEntriesSchema.parse([{ name: "svc", fake: {}, ...entry }]);
  return ConnectorSet.start(prepareConnectors(entries, { kinds: [kind], env }), tools ? { tools } : {});
}

describe("ConnectorSet", () => {
  it("follows the service's tool list, its going down and coming back", async () => {
    const { kind, state } = controllable();
    state.tools = [tool("a")];
    const set = await start(kind, {});
    expect(set.tools.names()).toEqual(["svc__a"]);
    state.tools = [tool("a"), tool("b")];
    state.context!.toolsChanged();
    expect(set.tools.names()).toEqual(["svc__a", "svc__b"]);
    const executor = new ToolExecutor({ tools: set.tools });
    state.context!.setDown("maintenance");
    expect(set.status()[0]).toMatchObject({ state: "down", reason: "maintenance" });
    expect((await executor.execute({ id: "1", name: "svc__b", arguments: {} })).content.text).toBe(
      "The svc service is unavailable right now (maintenance). Try again later.",
    );
    state.context!.setDown(undefined);
    expect((await executor.execute({ id: "2", name: "svc__b", arguments: {} })).content.text).toBe("b");
    await set.close();
    expect(set.tools.size).toBe(0);
  });

  it("adds to a registry it is given, never over a tool already there", async () => {
    const { kind, state } = controllable();
    state.tools = [tool("a"), tool("b")];
    const own = new Tools().register({ name: "svc__b", description: "Mine", run: () => "mine" });
    const set = await start(kind, {}, {}, own);
    expect(own.names()).toEqual(["svc__b", "svc__a"]);
    expect(own.get("svc__b")?.description).toBe("Mine");
    await set.close();
    expect(own.names()).toEqual(["svc__b"]);
  });

  it("keeps filled-in secrets out of reasons, logs and what the model reads", async () => {
    const { kind, state } = controllable();
    state.fail = "refused key KEY";
    const logged: unknown[] = [];
    const entries = ConnectorEntriesSchema.parse([
      { name: "svc", fake: { key: "${SVC_KEY}" }, tools: { allow: ["a"] } },
    ]);
    const set = await ConnectorSet.start(
      prepareConnectors(entries, { kinds: [kind], env: { SVC_KEY: "hunter22" } }),
      {
        logger: {
          debug() {},
          info() {},
          warn() {},
          error: (message, fields) => logged.push({ message, fields }),
        },
      },
    );
    expect(set.status()[0]?.reason).toBe("could not connect: refused key ***");
    expect(JSON.stringify(logged)).not.toContain("hunter22");
    await set.close();

    const up = controllable();
    up.state.tools = [
      tool("echo", () => {
        throw new ToolError("the service said: bad key hunter22");
      }),
    ];
    const upEntries = ConnectorEntriesSchema.parse([{ name: "svc", fake: { key: "${SVC_KEY}" } }]);
    const running = await ConnectorSet.start(
      prepareConnectors(upEntries, { kinds: [up.kind], env: { SVC_KEY: "hunter22" } }),
    );
    const result = await new ToolExecutor({ tools: running.tools }).execute({
      id: "1",
      name: "svc__echo",
      arguments: {},
    });
    expect(result.content.text).toBe("the service said: bad key ***");
    await running.close();
  });

  it("keeps filled-in secrets out of the results the model reads too", async () => {
    const echo = controllable();
    echo.state.tools = [
      tool("text", () => "sent Authorization: Bearer hunter22"),
      tool("output", () => new ToolOutput({ text: "key=hunter22&q=1" })),
      tool("json", () => ({ echoed: { headers: { "x-api-key": "hunter22" } }, ok: true })),
      tool("clean", () => ({ ok: true })),
    ];
    const entries = ConnectorEntriesSchema.parse([{ name: "svc", fake: { key: "${SVC_KEY}" } }]);
    const set = await ConnectorSet.start(
      prepareConnectors(entries, { kinds: [echo.kind], env: { SVC_KEY: "hunter22" } }),
    );
    const executor = new ToolExecutor({ tools: set.tools });
    const text = async (name: string) =>
      (await executor.execute({ id: name, name: `svc__${name}`, arguments: {} })).content.text;
    expect(await text("text")).toBe("sent Authorization: Bearer ***");
    expect(await text("output")).toBe("key=***&q=1");
    expect(await text("json")).toBe('{"echoed":{"headers":{"x-api-key":"***"}},"ok":true}');
    expect(await text("clean")).toBe('{"ok":true}');
    await set.close();
  });

  it("reports a connector still starting after the start timeout as down, and up once it connects", async () => {
    let release!: () => void;
    const slow = defineConnector({
      name: "fake",
      configSchema: z.strictObject({}),
      connect: () =>
        new Promise(
          (resolve) => (release = () => resolve({ tools: () => [tool("a")], close: async () => {} })),
        ),
    });
    const entries = ConnectorEntriesSchema.parse([{ name: "svc", fake: {} }]);
    const set = await ConnectorSet.start(prepareConnectors(entries, { kinds: [slow], env: {} }), {
      startTimeoutMs: 30,
    });
    expect(set.status()[0]).toMatchObject({ state: "down", reason: "did not connect within 30 ms" });
    release();
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(set.status()[0]).toMatchObject({ state: "up", tools: ["svc__a"] });
    await set.close();
  });
});
