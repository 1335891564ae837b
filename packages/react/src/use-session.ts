import type {
  ApprovalOutcome,
  ApprovalRequest,
  ImageContent,
  Response,
  Session,
  ToolCallItem,
} from "@patchbay/client";
import { useCallback, useEffect, useMemo, useSyncExternalStore } from "react";
import { useClient } from "./patchbay-provider";
import type { SessionOptions, SessionState, SessionStore } from "./session-store";
import type { ToolCallOf, ToolDefinitions } from "./typed-tools";
import { useSessionStore } from "./use-session-store";

/**
 * What {@link useSession} returns: the session's state and what a page can do with it.
 *
 * @example
 * ```ts
 * const { status, conversation, send, interrupt, approvals, decide, errors } = useSession("assistant");
 * ```
 */
export interface UseSessionResult extends SessionState {
  /** The store behind the hook, for {@link useToolCall} and {@link useApprovals}. */
  store: SessionStore;
  /** The client session once opened. */
  session: Session | undefined;
  /**
   * Sends a message; `undefined` while the session is not open yet, and when it is closed (then a
   * `disconnected` error is added to `errors`).
   */
  send(text: string, options?: { images?: ImageContent[] }): Response | undefined;
  /** Stops the running reply. */
  interrupt(): Promise<void>;
  /**
   * After a failed open (`status: "failed"` with no session), opens again now. The hook retries by
   * itself too, with backoff (1 s doubling to 30 s) while mounted, and at once when the client's
   * connection is open again.
   */
  retry(): void;
  /** Answers an approval. */
  decide(approvalId: string, allowed: boolean): Promise<ApprovalOutcome | undefined>;
}

// Before hydration and on the server: nothing is open.
const serverState = (store: SessionStore) => store.getSnapshot();

/**
 * Opens a session of `agent` for this component (created, or resumed when `resume` names one)
 * and keeps it while the component is mounted. It follows its arguments: another `agent` or
 * `resume` id lets go of the session (closed unless another component holds it) and opens the
 * one named, from `connecting` again; the same values in a new options object keep it, as does a
 * `resume` naming the session already open. `tools` are read when a session opens. Built on
 * `useSyncExternalStore`; StrictMode's double-mounted effects keep the one session, and the
 * page's tools are registered once. Safe to render on a server: nothing opens until the effect
 * runs in the browser.
 *
 * @example
 * ```tsx
 * const chat = useSession("assistant", { tools, resume: sessionStorage.getItem("session") });
 * useEffect(() => { if (chat.sessionId) sessionStorage.setItem("session", chat.sessionId); }, [chat.sessionId]);
 * ```
 */
export function useSession(agent: string, options: SessionOptions = {}): UseSessionResult {
  const store = useSessionStore(useClient(), agent, options);
  // Holds the store's session while mounted; a new store (other arguments) lets go of the old one.
  useEffect(() => store.retain(), [store]);
  const state = useSyncExternalStore(store.subscribe, store.getSnapshot, () => serverState(store));
  const send = useCallback(
    (text: string, sendOptions?: { images?: ImageContent[] }) => store.send(text, sendOptions),
    [store],
  );
  const interrupt = useCallback(() => store.interrupt(), [store]);
  const decide = useCallback((id: string, allowed: boolean) => store.decide(id, allowed), [store]);
  const retry = useCallback(() => store.retry(), [store]);
  return useMemo(
    () => ({ ...state, store, session: store.session, send, interrupt, decide, retry }),
    [state, store, send, interrupt, decide, retry],
  );
}

/**
 * One tool call of a session, kept current (status, progress, result), typed by the page's tool
 * definitions when given: `useToolCall<typeof tools>(store, id)`.
 *
 * @example
 * ```tsx
 * const call = useToolCall(chat.store, callId);
 * return <p>{call?.progress}</p>;
 * ```
 */
export function useToolCall<TTools extends ToolDefinitions = ToolDefinitions>(
  store: SessionStore,
  callId: string,
): ToolCallOf<TTools> | undefined {
  const select = useCallback(
    () =>
      store
        .getSnapshot()
        .conversation.find((item): item is ToolCallItem => item.type === "tool_call" && item.id === callId),
    [store, callId],
  );
  return useSyncExternalStore(store.subscribe, select, select) as ToolCallOf<TTools> | undefined;
}

/**
 * The approvals a session waits for, and the function that answers one.
 *
 * @example
 * ```tsx
 * const { approvals, decide } = useApprovals(chat.store);
 * ```
 */
export function useApprovals(store: SessionStore): {
  approvals: readonly ApprovalRequest[];
  decide(approvalId: string, allowed: boolean): Promise<ApprovalOutcome | undefined>;
} {
  const select = useCallback(() => store.getSnapshot().approvals, [store]);
  const approvals = useSyncExternalStore(store.subscribe, select, select);
  const decide = useCallback((id: string, allowed: boolean) => store.decide(id, allowed), [store]);
  return { approvals, decide };
}
