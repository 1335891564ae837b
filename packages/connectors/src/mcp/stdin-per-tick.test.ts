import type { Writable } from "node:stream";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { afterEach, describe, expect, it } from "vitest";
import { writeStdinPerTick } from "./stdin-per-tick";

/** A child that echoes its stdin: every message sent comes back as the transport's `onmessage`. */
function echo(): { transport: StdioClientTransport; received: JSONRPCMessage[] } {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ["-e", "process.stdin.pipe(process.stdout)"],
    stderr: "pipe",
  });
  const received: JSONRPCMessage[] = [];
  transport.onmessage = (message) => received.push(message);
  return { transport, received };
}

/** Counts the stream's writes by the path Node takes: `_write` per chunk or `_writev` per batch. */
function countWrites(transport: StdioClientTransport) {
  const stdin = (transport as unknown as { _process: { stdin: Writable } })._process.stdin as Writable & {
    _write: (...args: unknown[]) => void;
    _writev: (chunks: unknown[], ...rest: unknown[]) => void;
  };
  const counts = { write: 0, writev: [] as number[] };
  const write = stdin._write;
  const writev = stdin._writev;
  stdin._write = function (...args) {
    counts.write++;
    return write.apply(this, args);
  };
  stdin._writev = function (chunks, ...rest) {
    counts.writev.push(chunks.length);
    return writev.call(this, chunks, ...rest);
  };
  return counts;
}

const request = (id: number): JSONRPCMessage => ({ jsonrpc: "2.0", id, method: "ping" });

async function until(check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
  expect(check()).toBe(true);
}

describe("writeStdinPerTick", () => {
  const open: StdioClientTransport[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((transport) => transport.close()));
  });

  it("writes the messages sent in one tick with one writev, in order, and a lone message at once", async () => {
    const { transport, received } = echo();
    open.push(transport);
    expect(writeStdinPerTick(transport)).toBe(true);
    await transport.start();
    const counts = countWrites(transport);

    await Promise.all([transport.send(request(1)), transport.send(request(2)), transport.send(request(3))]);
    // The sends resolve while the pipe is corked; the batch leaves when the tick's jobs are done.
    expect(counts).toEqual({ write: 0, writev: [] });
    await new Promise((resolve) => setImmediate(resolve));
    expect(counts).toEqual({ write: 0, writev: [3] });
    await until(() => received.length === 3);
    expect(received.map((message) => (message as { id: number }).id)).toEqual([1, 2, 3]);

    // The next tick's message is its own batch, and leaves without waiting for another.
    await transport.send(request(4));
    await until(() => received.length === 4);
    expect(counts.write + counts.writev.length).toBe(2);
  });

  it("is what makes the difference: the SDK's transport alone writes each message by itself", async () => {
    const { transport, received } = echo();
    open.push(transport);
    await transport.start();
    const counts = countWrites(transport);
    await Promise.all([transport.send(request(1)), transport.send(request(2)), transport.send(request(3))]);
    expect(counts).toEqual({ write: 3, writev: [] });
    await until(() => received.length === 3);
  });

  it("leaves the SDK's refusal as it was once the server is gone, and wraps only a transport with a send", async () => {
    const { transport } = echo();
    writeStdinPerTick(transport);
    await transport.start();
    await transport.close();
    await expect(transport.send(request(1))).rejects.toThrow("Not connected");
    expect(writeStdinPerTick({})).toBe(false);
  });
});
