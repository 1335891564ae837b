import type { Writable } from "node:stream";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import { holdWritesForTick } from "@patchbay/protocol/runtime";

/**
 * The SDK's stdio transport, with the messages sent in one turn of the event loop written to
 * the server's stdin in one `writev` instead of one `write` each (`holdWritesForTick`, as the
 * worker's and the client's sockets do): at 64 calls in flight the per-message pipe write was the
 * largest single item of a connector call's CPU profile. A lone request still leaves in its own
 * turn. Where the SDK's child process is not where this expects it (another SDK version),
 * messages go out one write each, as before.
 */
export class TickWriteStdioTransport extends StdioClientTransport {
  override send(message: JSONRPCMessage): Promise<void> {
    const stdin = (this as unknown as { _process?: { stdin?: Writable | null } })._process?.stdin;
    if (stdin && !stdin.destroyed) holdWritesForTick({ _socket: stdin });
    return super.send(message);
  }
}
