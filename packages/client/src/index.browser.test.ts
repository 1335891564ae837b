import { fileURLToPath } from "node:url";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
import * as node from "./index";
import * as browser from "./index.browser";

const source = (pkg: string) => fileURLToPath(new URL(`../../${pkg}/src/index.ts`, import.meta.url));

async function bundledInputs(entry: string): Promise<string[]> {
  const result = await build({
    entryPoints: [fileURLToPath(new URL(entry, import.meta.url))],
    bundle: true,
    write: false,
    format: "esm",
    platform: "browser",
    conditions: ["browser"],
    metafile: true,
    logLevel: "silent",
    // Bundling the sources, like the tests do, so this holds before any build ran.
    alias: {
      "@patchbay/protocol/lite": fileURLToPath(new URL("../../protocol/src/lite.ts", import.meta.url)),
      "@patchbay/protocol/runtime": fileURLToPath(new URL("../../protocol/src/runtime.ts", import.meta.url)),
      "@patchbay/protocol": source("protocol"),
      "@patchbay/tools": source("tools"),
    },
    // ws has a stub for browsers; keeping it external makes its import visible in the output.
    external: ["ws"],
  });
  const output = Object.values(result.metafile.outputs)[0]!;
  return [...Object.keys(result.metafile.inputs), ...output.imports.map((i) => i.path)];
}

describe("package entries", () => {
  it("export the same names from the Node and the browser entry", () => {
    expect(Object.keys(browser).sort()).toEqual(Object.keys(node).sort());
    expect(browser.Client).not.toBe(node.Client);
    expect(Object.getPrototypeOf(browser.Client)).toBe(Object.getPrototypeOf(node.Client));
  });

  it("keep ws and node: modules out of the browser bundle, and only there", async () => {
    const nodeOnly = (inputs: string[]) =>
      inputs.filter((input) => input === "ws" || input.startsWith("node:"));
    expect(nodeOnly(await bundledInputs("./index.browser.ts"))).toEqual([]);
    expect(nodeOnly(await bundledInputs("./index.ts"))).toEqual(["ws"]);
  });

  it("uses the native WebSocket in the browser entry, looked up when dialing", async () => {
    const opened: string[] = [];
    const original = globalThis.WebSocket;
    class FakeWebSocket {
      readyState = 0;
      onopen = null;
      onmessage = null;
      onclose = null;
      onerror = null;
      constructor(url: string) {
        opened.push(url);
      }
      send() {}
      close() {}
    }
    globalThis.WebSocket = FakeWebSocket as unknown as typeof WebSocket;
    try {
      const client = new browser.Client({ baseUrl: "https://agents.example.com/" });
      client.setUser({ id: "u_1" }, "tok");
      void client.connect().catch(() => {});
      await new Promise((resolve) => setTimeout(resolve, 10));
      expect(opened).toEqual(["wss://agents.example.com/v1/client"]);
      client.close();
    } finally {
      if (original === undefined) Reflect.deleteProperty(globalThis, "WebSocket");
      else globalThis.WebSocket = original;
    }
  });
});
