import { useState } from "react";

/**
 * The input pinned under the conversation. Send is enabled when there is something to send and a
 * session to send it to (also while offline: the message waits and is shown as pending); Stop
 * only while a reply runs.
 */
export function Composer({
  canSend,
  canStop,
  onSend,
  onStop,
}: {
  canSend: boolean;
  canStop: boolean;
  onSend: (text: string) => unknown;
  onStop: () => void;
}) {
  const [text, setText] = useState("");
  const trimmed = text.trim();
  return (
    <form
      className="composer"
      onSubmit={(event) => {
        event.preventDefault();
        if (!trimmed || !canSend) return;
        onSend(trimmed);
        setText("");
      }}
    >
      <input
        aria-label="Message"
        autoComplete="off"
        placeholder="Message the assistant"
        value={text}
        onChange={(event) => setText(event.target.value)}
      />
      <button type="submit" disabled={!trimmed || !canSend}>
        Send
      </button>
      <button type="button" className="stop" disabled={!canStop} onClick={onStop}>
        Stop
      </button>
    </form>
  );
}
