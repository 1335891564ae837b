import type { Writable } from "node:stream";

/** The part of the SDK's stdio client transport this reaches: its `send`, and the child it spawned. */
interface StdioInternals {
  send(...args: unknown[]): Promise<void>;
  _process?: { stdin?: Writable | null } | undefined;
}

/**
 * Makes the SDK's stdio client transport write the messages it sends in one event-loop tick with
 * one `writev` to the server's stdin, instead of one `write` syscall per message. The SDK writes
 * each request as it is sent; with 64 calls in flight, the responses of one read start the next
 * calls in one burst of promise jobs, so their requests leave together: the first `send` of a tick
 * corks the pipe and a `process.nextTick` uncorks it after the burst (before any I/O, so a lone
 * call waits for nothing). The bytes and their order are the SDK's; `send` still resolves when
 * the SDK's `write` says the pipe took the message (or on `drain`).
 *
 * Reaches the child process where this SDK version keeps it (`_process.stdin`); if a later
 * version keeps it elsewhere, each message is written as the SDK writes it. Returns whether the
 * transport has a `send` to wrap.
 */
export function writeStdinPerTick(transport: object): boolean {
  const internals = transport as StdioInternals;
  if (typeof internals.send !== "function") return false;
  const send = internals.send;
  let corked: Writable | undefined;
  const uncork = () => {
    const stdin = corked;
    corked = undefined;
    stdin?.uncork();
  };
  internals.send = function sendInTick(this: StdioInternals, ...args: unknown[]) {
    const stdin = internals._process?.stdin;
    if (stdin && corked !== stdin && !stdin.destroyed) {
      if (corked) uncork();
      stdin.cork();
      corked = stdin;
      process.nextTick(uncork);
    }
    return send.apply(internals, args);
  };
  return true;
}
