/**
 * The interrupt rule, in one place: an interrupt cancels a running call only when its tool is
 * `interruptible` and the call is not held (it has not disallowed interruptions, or its hold was
 * refused). A held call runs on to its result or its timeout. The server's tool-call runner
 * applies it to every call wherever it runs; a standalone `ToolExecutor.interrupt()` applies it
 * to its own calls.
 *
 * @example
 * ```ts
 * if (interruptCancels({ interruptible: spec.interruptible === true, held })) backend.cancel(callId, "interrupted");
 * ```
 */
export function interruptCancels(call: { interruptible: boolean; held: boolean }): boolean {
  return call.interruptible && !call.held;
}
