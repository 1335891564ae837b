import type { ConversationItem, ServerToWorkerFrame } from "@patchbay/protocol";
import { itemJson } from "../store/item-json";

/** A `hosted.call` as the server builds it. */
export type HostedCallFrame = ServerToWorkerFrame & { type: "hosted.call" };

/** A `hosted.call` within the worker's limit, encoded once, or how large it stays at best. */
export type FittedHostedCall =
  | { ok: true; frame: HostedCallFrame; text: string }
  | { ok: false; bytes: number };

const bytesOf = (text: string) => Buffer.byteLength(text, "utf8");

/**
 * A `hosted.call`'s text: its other fields, then `conversation` (last) spliced from its items'
 * own texts, so that no item is encoded again for the frame.
 */
export function hostedCallText(
  head: Omit<HostedCallFrame, "conversation">,
  itemTexts: readonly string[],
): string {
  const start = JSON.stringify(head);
  return `${start.slice(0, -1)},"conversation":[${itemTexts.join(",")}]}`;
}

/** The frame's text, its items' texts shared with the store's (item-json.ts). */
function hostedCallJson(frame: HostedCallFrame): string {
  const { conversation, ...head } = frame;
  return hostedCallText(head, conversation.map(itemJson));
}

/** The item without inline image data (https URLs stay): what trimming drops first. */
function withoutInlineImages(item: ConversationItem): ConversationItem {
  if (item.type === "message") {
    if (!item.images?.some((image) => "data" in image)) return item;
    return { ...item, images: item.images.filter((image) => !("data" in image)) };
  }
  const result = item.result;
  if (!result?.content.images.some((image) => "data" in image)) return item;
  return {
    ...item,
    result: {
      ...result,
      content: { ...result.content, images: result.content.images.filter((image) => !("data" in image)) },
    },
  };
}

/**
 * Makes a `hosted.call` fit the largest frame its worker accepts, so the server never sends a
 * frame the worker's socket would close on (and the call would loop on redelivery). When the
 * frame is too large, inline images leave `conversation` first, then its oldest items, and
 * `conversationTrimmed` says so. The call's own arguments are never cut: when they alone do
 * not fit, the answer is `ok: false` and the call must fail.
 */
export function fitHostedCall(frame: HostedCallFrame, maxBytes: number): FittedHostedCall {
  const text = hostedCallJson(frame);
  // A UTF-16 code unit is at most 3 UTF-8 bytes: most calls are judged without encoding them.
  if (text.length * 3 <= maxBytes || bytesOf(text) <= maxBytes) return { ok: true, frame, text };

  const items = frame.conversation.map(withoutInlineImages);
  const base = bytesOf(JSON.stringify({ ...frame, conversation: [], conversationTrimmed: true }));
  const sizes = items.map((item) => bytesOf(itemJson(item)));
  // Items are joined by commas: n items add n - 1 bytes.
  let total = base + sizes.reduce((sum, size) => sum + size, 0) + Math.max(0, items.length - 1);
  let first = 0;
  while (total > maxBytes && first < items.length) {
    total -= sizes[first]! + (items.length - first > 1 ? 1 : 0);
    first++;
  }
  if (total > maxBytes) return { ok: false, bytes: total };
  const trimmed: HostedCallFrame = { ...frame, conversation: items.slice(first), conversationTrimmed: true };
  return { ok: true, frame: trimmed, text: hostedCallJson(trimmed) };
}
