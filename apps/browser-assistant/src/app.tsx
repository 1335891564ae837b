import { ApprovalPrompt, Conversation, useSession } from "@patchbay/react";
import { useEffect, useLayoutEffect, useRef, useState } from "react";
import { Composer } from "./composer";
import { pageTools } from "./page-tools";

const SESSION_KEY = "patchbay.sessionId";

/**
 * The chat. A reload keeps the session: its id lives in sessionStorage and `resume` replays the
 * conversation, pending approvals included. Only product words reach the screen: errors become
 * one sentence, and a tool's result text (written for the model) is never shown.
 */
export function App() {
  const [notices, setNotices] = useState<string[]>([]);
  const [tools] = useState(() => pageTools((note) => setNotices((all) => [...all, note])));
  const [resume] = useState(() => sessionStorage.getItem(SESSION_KEY));
  const chat = useSession("assistant", { tools, resume });

  useEffect(() => {
    if (!chat.sessionId) return;
    sessionStorage.setItem(SESSION_KEY, chat.sessionId);
    document.body.dataset.session = chat.sessionId;
    document.body.dataset.ready = "true";
  }, [chat.sessionId]);

  // Follow the conversation: stay at the bottom while new things arrive, unless the person
  // scrolled up to read.
  const scroller = useRef<HTMLDivElement>(null);
  const pinned = useRef(true);
  useLayoutEffect(() => {
    const element = scroller.current;
    if (element && pinned.current) element.scrollTop = element.scrollHeight;
  });

  const busy =
    chat.status === "thinking" || chat.status === "streaming" || chat.status === "waiting_for_approval";
  const last = chat.conversation.at(-1);
  const showThinking =
    chat.status === "thinking" &&
    !(last?.type === "tool_call" && (last.status === "running" || last.status === "pending"));
  const offline = chat.sessionId !== undefined && chat.connection !== "open";
  const failed = chat.status === "failed" && chat.sessionId === undefined;

  return (
    <div className="app">
      <header>
        <h1>Browser assistant</h1>
        <button
          type="button"
          className="new"
          onClick={() => {
            sessionStorage.removeItem(SESSION_KEY);
            location.reload();
          }}
        >
          New conversation
        </button>
      </header>
      <div
        className="scroller"
        ref={scroller}
        onScroll={(event) => {
          const element = event.currentTarget;
          pinned.current = element.scrollHeight - element.scrollTop - element.clientHeight < 40;
        }}
      >
        <main>
          {chat.conversation.length === 0 && chat.pending.length === 0 ? (
            <p className="hint">
              Try: <em>where am I?</em> · <em>what time is it?</em> · <em>find cafés near me</em> ·{" "}
              <em>seat map for LH400</em> · <em>flights to New York</em>
            </p>
          ) : null}
          <Conversation items={chat.conversation} pending={chat.pending} interrupted={chat.interrupted} />
          {showThinking ? (
            <p className="thinking" data-testid="thinking" aria-live="polite">
              <span className="dots" aria-hidden="true" /> Thinking…
            </p>
          ) : null}
          {chat.approvals.map((approval) => (
            <ApprovalPrompt key={approval.id} approval={approval} onDecide={chat.decide} />
          ))}
          {notices.map((notice) => (
            <p key={notice} className="notice" data-testid="notice">
              {notice}
            </p>
          ))}
        </main>
      </div>
      {offline ? (
        <p className="banner" data-testid="offline">
          Reconnecting… Messages you send now are delivered when the connection is back.
        </p>
      ) : null}
      {failed ? (
        <p className="banner error" data-testid="failed">
          The assistant is not reachable right now. Please try again later.
        </p>
      ) : null}
      {chat.errors.length > 0 && !failed ? (
        <p className="banner error" data-testid="error">
          Something went wrong with the last request. Please try again.
        </p>
      ) : null}
      <Composer
        canSend={chat.sessionId !== undefined}
        canStop={busy && chat.connection === "open"}
        onSend={(text) => chat.send(text)}
        onStop={() => void chat.interrupt()}
      />
    </div>
  );
}
