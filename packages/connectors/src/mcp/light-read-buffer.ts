import { ReadBuffer, STDIO_DEFAULT_MAX_BUFFER_SIZE } from "@modelcontextprotocol/sdk/shared/stdio.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/**
 * The SDK stdio client transport's line reader without its zod parse of each message. The SDK's
 * `ReadBuffer` parses every line with `JSONRPCMessageSchema` (a union of four JSON-RPC shapes,
 * copied field by field), and the client's `Protocol` then checks the same message against the
 * same four schemas again to route it (`isJSONRPCResultResponse`, `isJSONRPCRequest`, ...),
 * reporting any message that is none of them as an error. So the first parse decides nothing the
 * second does not: this reader splits lines and parses the JSON, and leaves the checking to
 * `Protocol`. Lines, the size limit and the errors for bad JSON are the SDK's.
 */
export class LightReadBuffer extends ReadBuffer {
  #buffer: Buffer | undefined;
  readonly #maxBufferSize = STDIO_DEFAULT_MAX_BUFFER_SIZE;

  override append(chunk: Buffer): void {
    const size = (this.#buffer?.length ?? 0) + chunk.length;
    if (size > this.#maxBufferSize) {
      this.clear();
      throw new Error(`ReadBuffer exceeded maximum size of ${this.#maxBufferSize} bytes`);
    }
    this.#buffer = this.#buffer ? Buffer.concat([this.#buffer, chunk]) : chunk;
  }

  override readMessage(): JSONRPCMessage | null {
    const buffer = this.#buffer;
    if (!buffer) return null;
    const index = buffer.indexOf(10); // \n
    if (index === -1) return null;
    const end = index > 0 && buffer[index - 1] === 13 ? index - 1 : index; // a \r before it
    const line = buffer.toString("utf8", 0, end);
    this.#buffer = buffer.subarray(index + 1);
    return JSON.parse(line) as JSONRPCMessage;
  }

  override clear(): void {
    this.#buffer = undefined;
  }
}

/**
 * Puts a {@link LightReadBuffer} in the SDK's stdio client transport, if the transport still
 * keeps its reader where this SDK version does (`_readBuffer`, a `ReadBuffer`); otherwise the
 * transport keeps its own. Returns whether it did.
 */
export function useLightReadBuffer(transport: object): boolean {
  const internals = transport as { _readBuffer?: unknown };
  if (!(internals._readBuffer instanceof ReadBuffer)) return false;
  internals._readBuffer = new LightReadBuffer();
  return true;
}
