import type { ConversationItem, MessageItem } from "@patchbay/client";
import type { ReactNode } from "react";
import type { InterruptReason, PendingMessage } from "./session-store";
import { imageSource, ToolCall } from "./tool-call";

/** The words under a reply that was stopped. */
const INTERRUPTED_TEXT: Record<InterruptReason, string> = {
  stopped: "You stopped this reply.",
  superseded: "Interrupted by your next message.",
  interrupted: "This reply was interrupted.",
};

/**
 * The conversation: user and assistant messages, tool calls as {@link ToolCall}s, a note under a
 * reply that was stopped (by Stop, or by a newer message), and messages still on their way shown
 * as pending. Headless: a list with `pb-` class names and `data-role`/`data-status`; pass
 * `renderItem` to draw an item yourself (return `undefined` to keep the default).
 *
 * @example
 * ```tsx
 * <Conversation items={chat.conversation} pending={chat.pending} interrupted={chat.interrupted} />
 * ```
 */
export function Conversation({
  items,
  pending = [],
  interrupted = {},
  renderItem,
  className,
}: {
  items: readonly ConversationItem[];
  pending?: readonly PendingMessage[];
  interrupted?: Readonly<Record<string, InterruptReason>>;
  renderItem?: (item: ConversationItem) => ReactNode | undefined;
  className?: string;
}) {
  // The note goes under the last item of each interrupted reply.
  const lastOfResponse = new Map<string, string>();
  for (const item of items) if (item.responseId) lastOfResponse.set(item.responseId, item.id);
  const notes = new Map<string, string>();
  for (const item of items) {
    const responseId = item.responseId;
    const stopped =
      (item.type === "message" && item.status === "interrupted") ||
      (responseId !== undefined && interrupted[responseId] !== undefined);
    if (stopped && responseId !== undefined) {
      notes.set(lastOfResponse.get(responseId)!, INTERRUPTED_TEXT[interrupted[responseId] ?? "interrupted"]);
    }
  }
  return (
    <ol className={className ?? "pb-conversation"} aria-live="polite">
      {items.map((item) => (
        <li key={item.id} className="pb-item" data-type={item.type}>
          {renderItem?.(item) ??
            (item.type === "message" ? <Message item={item} /> : <ToolCall item={item} />)}
          {notes.has(item.id) ? (
            <p className="pb-interrupted" data-testid="interrupted">
              {notes.get(item.id)}
            </p>
          ) : null}
        </li>
      ))}
      {pending.map((message) => (
        <li key={message.commandId} className="pb-item" data-type="message">
          <div
            className="pb-message pb-pending"
            data-role="user"
            data-status="pending"
            data-testid="message-pending"
          >
            <p className="pb-text">{message.text}</p>
            <span className="pb-pending-note">Sending…</span>
          </div>
        </li>
      ))}
    </ol>
  );
}

function Message({ item }: { item: MessageItem }) {
  return (
    <div
      className="pb-message"
      data-role={item.role}
      data-status={item.status}
      data-testid={`message-${item.role}`}
    >
      {item.text ? <p className="pb-text">{item.text}</p> : null}
      {(item.images ?? []).map((image, index) => {
        const key = `${index}:${imageSource(image).slice(-24)}`;
        return <img key={key} className="pb-message-image" src={imageSource(image)} alt="" />;
      })}
    </div>
  );
}
