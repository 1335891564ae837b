import { CallContext } from "./call-context";
import { signalOf } from "./call-state";
import type { RunCall } from "./call-step-run";
import { lightSignalOf } from "./light-signal";
import { runArgumentsRead } from "./run-parameters";

/**
 * How the Node entry calls `run` (`useRunCall`): with only the arguments the function can see
 * (run-parameters.ts), so a `run` that declares only `args` costs no signal and no context. A
 * signal it cannot see is still the call's: `ctx.signal` and the hold's make it when read,
 * already aborted if the call was stopped before. A `lightSignal` tool gets the stand-in
 * (light-signal.ts) as its second argument.
 */
export const runCallFast: RunCall = (host, state, definition, args) => {
  // Called with fewer arguments than its type says: it declares no more than it is given.
  const run = definition.run as (...args: unknown[]) => unknown;
  const seen = runArgumentsRead(run);
  if (seen <= 1) return run(args);
  const signal = definition.lightSignal === true ? lightSignalOf(state) : signalOf(state);
  return seen === 2 ? run(args, signal) : run(args, signal, new CallContext(host, state));
};
