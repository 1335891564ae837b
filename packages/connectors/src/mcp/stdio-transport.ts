import type { Writable } from "node:stream";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/**
 * The SDK's stdio transport, with the messages sent in one turn of the event loop written to
 * the server's stdin in one `writev` instead of one `write` each: at 64 calls in flight the
 * per-message syscall was the largest single item of a connector call's CPU profile, and the
 * server reads the requests of one write together. A lone request still leaves in the same turn
 * (the stream is uncorked on `process.nextTick`). Where the SDK's child process is not where this
 * expects it (another SDK version), messages go out one write each, as before.
 */
export class TickWriteStdioTransport extends StdioClientTransport {
  #corked: Writable | undefined;

  override send(message: JSONRPCMessage): Promise<void> {
    const stdin = (this as unknown as { _process?: { stdin?: Writable | null } })._process?.stdin;
    if (stdin && this.#corked === undefined && !stdin.writableCorked && !stdin.destroyed) {
      stdin.cork();
      this.#corked = stdin;
      process.nextTick(TickWriteStdioTransport.#uncork, this);
    }
    return super.send(message);
  }

  // A static function taking the transport, so a turn's flush makes no closure.
  static #uncork(transport: TickWriteStdioTransport): void {
    const stdin = transport.#corked;
    transport.#corked = undefined;
    stdin?.uncork();
  }
}
