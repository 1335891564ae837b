import { type IdempotencyStore, pageReloadedWhileRunning, type ToolExecutionResult } from "@patchbay/tools";

/**
 * Wraps a page's idempotency store so a page call runs at most once even across a reload: before
 * a call first runs here, a "started" entry is written beside where its result will go. A later
 * page (after a reload) that is delivered the call again finds its result, or, when the earlier
 * page went away while the call ran, the started entry, and answers with a result that says the
 * outcome is unknown instead of running it again. Only as durable as the store it wraps: the
 * default in-memory store of Node forgets both on restart.
 *
 * `nameOf` gives the tool's name for a call id (for the model's sentence).
 */
export function journaledStore(
  store: IdempotencyStore,
  sessionId: string,
  nameOf: (callId: string) => string,
): IdempotencyStore {
  return {
    async get(key) {
      const done = await store.get(key);
      if (done !== undefined) return done;
      const startedKey = `${key}${STARTED_SUFFIX}`;
      const started = await store.get(startedKey);
      if (started !== undefined) return started;
      const callId = key.startsWith(`${sessionId}:`) ? key.slice(sessionId.length + 1) : key;
      try {
        await store.set(startedKey, unknownOutcome(callId, nameOf(callId)));
      } catch {
        // Over quota, or the store is down: the call still runs (as it would without a journal).
      }
      return undefined;
    },
    set: (key, result) => store.set(key, result),
  };
}

const STARTED_SUFFIX = "#started";

function unknownOutcome(callId: string, name: string): ToolExecutionResult {
  const text = pageReloadedWhileRunning(name);
  return {
    callId,
    name,
    outcome: "failed",
    content: { text, images: [] },
    error: { code: "page_reloaded", message: text },
    held: false,
    attempt: 1,
    durationMs: 0,
  };
}
