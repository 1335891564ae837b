import type { Writable } from "node:stream";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { TickWriteStdioTransport } from "./stdio-transport";

const FIXTURE = fileURLToPath(new URL("../../test/fixtures/mcp-fixture.mjs", import.meta.url));
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
});

async function connect() {
  const transport = new TickWriteStdioTransport({
    command: process.execPath,
    args: [FIXTURE],
    stderr: "pipe",
  });
  const client = new Client({ name: "test", version: "1" }, { capabilities: {} });
  clients.push(client);
  await client.connect(transport);
  // `notifications/initialized`, sent as connect ends, leaves on the next tick: before counting.
  await new Promise((resolve) => setImmediate(resolve));
  const stdin = (transport as unknown as { _process: { stdin: Writable } })._process.stdin;
  // Counts the writes reaching the pipe: one per `_write`, one per `_writev` whatever its chunks.
  const writes: number[] = [];
  const own = stdin as unknown as {
    _write: (...args: unknown[]) => void;
    _writev: (chunks: unknown[], ...rest: unknown[]) => void;
  };
  const write = own._write.bind(stdin);
  const writev = own._writev.bind(stdin);
  own._write = (...args) => {
    writes.push(1);
    write(...args);
  };
  own._writev = (chunks, ...rest) => {
    writes.push(chunks.length);
    writev(chunks, ...rest);
  };
  return { client, writes };
}

describe("TickWriteStdioTransport", () => {
  it("writes the requests sent in one turn of the event loop to the server in one write", async () => {
    const { client, writes } = await connect();
    const sums = await Promise.all(
      Array.from({ length: 20 }, (_, i) => client.callTool({ name: "add", arguments: { a: i, b: 1 } })),
    );
    expect(sums.map((result) => (result.content as { text: string }[])[0]!.text)).toEqual(
      Array.from({ length: 20 }, (_, i) => JSON.stringify({ sum: i + 1 })),
    );
    expect(writes).toEqual([20]);
  });

  it("sends a lone request at once, and one per turn when calls follow each other", async () => {
    const { client, writes } = await connect();
    for (let i = 0; i < 3; i++) {
      const result = await client.callTool({ name: "add", arguments: { a: i, b: i } });
      expect((result.content as { text: string }[])[0]!.text).toBe(JSON.stringify({ sum: 2 * i }));
    }
    expect(writes).toEqual([1, 1, 1]);
  });
});
