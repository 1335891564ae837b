/**
 * Why a call the model made was withdrawn before it ran.
 *
 * @example
 * ```ts
 * ModelSentences.withdrawn("round_limit", 8);
 * ```
 */
export type WithdrawReason = "interrupted" | "round_limit" | "session_closed";

/**
 * What the model is told when a tool call does not complete: one sentence per failure, the same
 * wherever the call ran (in-process, in a page, on a worker) and whichever part noticed (the
 * executor, the server's tool-call runner, a router). Every path builds its text here, so the
 * same failure reads the same everywhere. Developers get codes and stacks in logs; these short
 * sentences are for the model only.
 *
 * @example
 * ```ts
 * ModelSentences.timedOut("book_flight", 30_000); // 'The call of "book_flight" timed out after 30000 ms.'
 * ```
 */
export const ModelSentences = {
  unknownTool,
  unreadableArguments,
  invalidArguments,
  declined,
  approvalExpired,
  approvalUnavailable,
  approvalMismatch,
  approvalFailed,
  withdrawn,
  cancelled,
  notRunHere,
  cancelUnconfirmed,
  timedOut,
  idleTimedOut,
  failed,
  unusableOutput,
  lookupFailed,
  pageReloadedWhileRunning,
  noPage,
  noWorker,
  notHosted,
  shuttingDown,
  shutDown,
  undelivered,
  callTooLarge,
  serverRestarted,
  unfinished,
} as const;

// One function per sentence, so a bundle keeps only the sentences its code says (a page says
// the executor's, not the server's).
/** The model named a tool nobody offers. */
export function unknownTool(name: string, available: readonly string[]): string {
  return `There is no tool named "${name}". Available tools: ${available.length ? available.join(", ") : "none"}.`;
}

/** The arguments are not a JSON object (`why` is the parser's complaint). */
export function unreadableArguments(name: string, why: string): string {
  return `The arguments for "${name}" could not be read: ${why}`;
}

/** The arguments do not fit the tool's schema; one issue per line. */
export function invalidArguments(name: string, issues: readonly string[]): string {
  return `The arguments for "${name}" do not fit its schema:\n${issues.join("\n")}`;
}

/** The user declined; `reason` is their own words, when they gave any. */
export function declined(name: string, reason?: string): string {
  const base = `The user declined the call of "${name}"; it did not run.`;
  return reason === undefined || reason.trim() === "" ? base : `${base} Their reason: ${reason.trim()}`;
}

export function approvalExpired(name: string): string {
  return `The user did not answer the approval for "${name}" in time, so it did not run.`;
}

export function approvalUnavailable(name: string): string {
  return `"${name}" needs the user's approval and there is no one to ask here, so it did not run.`;
}

/** The tool's `approval.when` threw, so whether to ask could not be decided (the error is in the host's log). */
export function approvalCheckFailed(name: string): string {
  return `"${name}" did not run: whether to ask the user could not be decided.`;
}

/**
 * A conditional approval asked upstream did not allow the call (`declined`, `expired`,
 * `cancelled`, ...). Where the server asked, it tells the model itself, in its own words.
 */
export function approvalNotGiven(name: string, outcome: string): string {
  return `"${name}" did not run: its approval ended ${outcome}.`;
}

export function approvalMismatch(name: string): string {
  return `"${name}" did not run: the approval given was for a different call or different arguments.`;
}

export function approvalFailed(name: string, why: string): string {
  return `"${name}" did not run: the approval could not be asked (${why}).`;
}

/**
 * A call the model made that never started: the user interrupted first, the reply reached the
 * agent's round limit (`maxRounds`), or the session closed (shutdown, deletion) first.
 */
export function withdrawn(why: WithdrawReason = "interrupted", maxRounds?: number): string {
  if (why === "round_limit") {
    const limit =
      maxRounds === undefined ? "the agent's limit of tool rounds" : `its limit of ${maxRounds} tool rounds`;
    return `The call was withdrawn: this reply reached ${limit} before it could run.`;
  }
  if (why === "session_closed")
    return "The call was withdrawn: the session closed (the server shut down or the session was deleted) before it ran.";
  return "The call was withdrawn: the user interrupted before it ran.";
}

/**
 * A call stopped by an interrupt, by the session closing, or by whoever runs the executor.
 * A held call had started a change, which may have completed.
 */
export function cancelled(
  name: string,
  why: "interrupted" | "session_closed" | "cancelled",
  held: boolean,
): string {
  if (held)
    return `The call of "${name}" was cancelled after it had started a change, which may have completed.`;
  if (why === "interrupted") return `The call of "${name}" was cancelled: the user interrupted.`;
  if (why === "session_closed") return `The call of "${name}" was cancelled: the session closed.`;
  return `The call of "${name}" was cancelled.`;
}

/** A cancel of a call the page or worker never ran (nothing to stop). */
export function notRunHere(): string {
  return "The call was cancelled before it ran.";
}

/** An interrupt's cancel that the page or worker did not confirm within the grace. */
export function cancelUnconfirmed(name: string, graceMs: number): string {
  return `The call of "${name}" was cancelled because the user interrupted, but where it runs did not confirm within ${graceMs} ms, so it may still have made its change.`;
}

export function timedOut(name: string, timeoutMs: number): string {
  return `The call of "${name}" timed out after ${timeoutMs} ms.`;
}

export function idleTimedOut(name: string, idleMs: number): string {
  return `The call of "${name}" made no progress for ${idleMs} ms and was stopped.`;
}

/** The tool threw (`why` is its error's message). */
export function failed(name: string, why: string): string {
  return `The call of "${name}" failed: ${why}`;
}

export function unusableOutput(name: string, why: string): string {
  return `"${name}" returned a result that cannot be shown: ${why}`;
}

/** The idempotency store could not say whether the call already ran, so it did not run. */
export function lookupFailed(name: string): string {
  return `"${name}" could not run: its earlier result could not be looked up.`;
}

/** A page call that was running when its page reloaded: not run again, its effect unknown. */
export function pageReloadedWhileRunning(name: string): string {
  return `The call of "${name}" was running when the user's page reloaded; it was not run again, so whether it took effect is unknown.`;
}

export function noPage(name: string): string {
  return `The tool "${name}" runs in the user's page, and no page is connected to this session right now.`;
}

export function noWorker(name: string): string {
  return `No worker hosting "${name}" is connected, so the tool did not run.`;
}

export function notHosted(name: string, agent: string): string {
  return `The tool "${name}" is not hosted for agent ${agent} on this worker.`;
}

export function shuttingDown(name: string): string {
  return `The server is shutting down; "${name}" did not run.`;
}

export function shutDown(name: string): string {
  return `The server shut down before "${name}" answered.`;
}

export function undelivered(name: string): string {
  return `The call of "${name}" could not be delivered.`;
}

/** The call's arguments alone are over the largest frame its worker reads. */
export function callTooLarge(name: string, bytes: number, limit: number): string {
  return `The call to ${name} could not be delivered: its arguments take ${bytes} bytes, more than the ${limit} bytes its worker accepts in one frame.`;
}

export function serverRestarted(): string {
  return "The call did not finish: the server restarted.";
}

/** A call the conversation shows without a result (its turn ended early), by its status. */
export function unfinished(status: string): string {
  switch (status) {
    case "pending":
      return "The call did not run: the turn ended before it started.";
    case "awaiting_approval":
      return "The call did not run: the turn ended while it waited for approval.";
    case "running":
      return "The call did not finish: the turn ended while it ran.";
    case "withdrawn":
      return withdrawn();
    default:
      return `The call ended as ${status}.`;
  }
}
