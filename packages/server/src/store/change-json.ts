import type { SessionEvent } from "@patchbay/protocol";
import { itemJson } from "./item-json";

// The JSON text of what a commit writes, made once and shared. An accepted message used to be
// serialized three times (its item for the items table, its `message.created` event, which
// carries the same item, for the events table, and that event again for each socket attached to
// the session): 2 ms each for a 1 MB message, on the event loop every session shares. Now the
// item is serialized once, the event's text is built around the item's, and the sockets send
// the event's stored text (see {@link committedEventJson}).

/** The texts of the events committed lately, for the sockets that send them (dropped with the event). */
const eventTexts = new WeakMap<SessionEvent, string>();

/** The JSON texts of one change's items and events, each made once. */
export class ChangeJson {
  /** Texts of the change's items that are not frozen (made on first need: most items are). */
  private items: Map<object, string> | undefined;

  /**
   * The text of an item of the change: a committed (frozen) item's is shared with every other
   * part that needs it (item-json.ts); any other is made once for this change.
   */
  item(item: object): string {
    if (Object.isFrozen(item)) return itemJson(item);
    this.items ??= new Map();
    let text = this.items.get(item);
    if (text === undefined) {
      text = JSON.stringify(item);
      this.items.set(item, text);
    }
    return text;
  }

  /**
   * The text of a committed event (with its `seq`): an item it carries is written as the item's
   * text (its key comes last), and the text is kept for {@link committedEventJson}.
   */
  event(event: SessionEvent): string {
    const item = (event as { item?: unknown }).item;
    let text: string;
    if (typeof item === "object" && item !== null) {
      const { item: _item, ...rest } = event as SessionEvent & { item: object };
      const head = JSON.stringify(rest);
      text = `${head.slice(0, -1)}${head === "{}" ? "" : ","}"item":${this.item(item)}}`;
    } else {
      text = JSON.stringify(event);
    }
    eventTexts.set(event, text);
    return text;
  }
}

/** A stored event's JSON text as the store wrote it, or `undefined` (an event read back, say). */
export function committedEventJson(event: SessionEvent): string | undefined {
  return eventTexts.get(event);
}

/** Remembers the text a store wrote for an event it made some other way. */
export function rememberEventJson(event: SessionEvent, text: string): void {
  eventTexts.set(event, text);
}
