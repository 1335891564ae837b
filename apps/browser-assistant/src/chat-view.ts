import type { ConversationItem, ToolCallItem } from "@patchbay/client";

/**
 * Draws the conversation. `session.conversation` is kept current by the client (messages, and
 * each tool call with its display title, status, progress and result), so the view simply
 * redraws it on every `conversation` event.
 */
export function renderConversation(
  log: HTMLElement,
  items: readonly ConversationItem[],
  awaitingApproval: ReadonlySet<string>,
): void {
  log.replaceChildren(
    ...items.map((item) =>
      item.type === "message" ? messageView(item) : toolStepView(item, awaitingApproval.has(item.id)),
    ),
  );
  log.scrollTop = log.scrollHeight;
}

function messageView(item: Extract<ConversationItem, { type: "message" }>): HTMLElement {
  const view = element("div", `message ${item.role}`, item.text);
  view.dataset.testid = `message-${item.role}`;
  if (item.status === "interrupted") view.append(element("span", "note", " (stopped)"));
  return view;
}

const STATUS_TEXT: Record<ToolCallItem["status"], string> = {
  pending: "waiting",
  awaiting_approval: "waiting for your answer",
  running: "running",
  completed: "done",
  failed: "failed",
  cancelled: "cancelled",
  declined: "declined",
  timed_out: "timed out",
  withdrawn: "withdrawn",
};

function toolStepView(call: ToolCallItem, awaitingApproval: boolean): HTMLElement {
  // A call waiting for the user's answer has an entry in `session.approvals`.
  const status = call.status === "pending" && awaitingApproval ? "awaiting_approval" : call.status;
  const view = element("div", `step ${status}`);
  view.dataset.testid = "tool-step";
  view.append(
    element("span", "title", call.displayTitle ?? call.name),
    element("span", "status", STATUS_TEXT[status]),
  );
  if (call.status === "running" && call.progress) view.append(element("div", "progress", call.progress));
  for (const image of call.result?.content.images ?? []) {
    const img = document.createElement("img");
    img.alt = `${call.name} result`;
    img.src = "url" in image ? image.url : `data:${image.mimeType};base64,${image.data}`;
    view.append(img);
  }
  return view;
}

export function element(tag: string, className: string, text?: string): HTMLElement {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}
