import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ReadBuffer, STDIO_DEFAULT_MAX_BUFFER_SIZE } from "@modelcontextprotocol/sdk/shared/stdio.js";
import { describe, expect, it } from "vitest";
import { LightReadBuffer, useLightReadBuffer } from "./light-read-buffer";

const lines = (reader: ReadBuffer) => {
  const read: unknown[] = [];
  for (let message = reader.readMessage(); message !== null; message = reader.readMessage())
    read.push(message);
  return read;
};

describe("LightReadBuffer", () => {
  it("reads what the SDK's reader reads: whole lines, \\r\\n too, across chunks", () => {
    const light = new LightReadBuffer();
    const sdk = new ReadBuffer();
    const stream =
      '{"jsonrpc":"2.0","id":1,"result":{"a":"é"}}\r\n{"jsonrpc":"2.0","method":"notifications/x"}\n{"jsonrpc":"2.0","id":2,"res';
    const bytes = Buffer.from(stream);
    for (const reader of [light, sdk]) {
      reader.append(bytes.subarray(0, 20));
      reader.append(bytes.subarray(20));
    }
    expect(lines(light)).toEqual(lines(sdk));
    for (const reader of [light, sdk]) reader.append(Buffer.from('ult":{}}\n'));
    expect(lines(light)).toEqual([{ jsonrpc: "2.0", id: 2, result: {} }]);
    expect(lines(sdk)).toEqual([{ jsonrpc: "2.0", id: 2, result: {} }]);
  });

  it("throws for a line that is not JSON and goes on with the next, and refuses more than the SDK's limit", () => {
    const light = new LightReadBuffer();
    light.append(Buffer.from('not json\n{"jsonrpc":"2.0","id":3,"result":{}}\n'));
    expect(() => light.readMessage()).toThrow(SyntaxError);
    expect(light.readMessage()).toEqual({ jsonrpc: "2.0", id: 3, result: {} });
    expect(() => light.append(Buffer.alloc(STDIO_DEFAULT_MAX_BUFFER_SIZE + 1))).toThrow(/maximum size/);
    expect(light.readMessage()).toBeNull();
  });

  it("goes into the SDK's stdio transport only where that keeps its reader", () => {
    const transport = new StdioClientTransport({ command: process.execPath });
    expect(useLightReadBuffer(transport)).toBe(true);
    expect((transport as unknown as { _readBuffer: unknown })._readBuffer).toBeInstanceOf(LightReadBuffer);
    expect(useLightReadBuffer({})).toBe(false);
  });
});
