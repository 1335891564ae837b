// The JSON text of a conversation item, made once per version of the item and shared by every
// part that needs it: the store's row and the event that carries the item (change-json.ts), the
// quota's measure of a conversation (conversation-window.ts), and the `hosted.call` frames that
// carry the item to workers (kept-conversations.ts, fit-hosted-call.ts). Before, one version of
// a tool call's item was serialized three times in a turn: by the store, by the measure of the
// next message's quota, and for the worker's next call.
//
// An item is identified by its object: the session log freezes an item when it is committed, and
// a change to an item commits a new object with the same id (session-log.ts). Only frozen items
// are kept, so an object still being built is encoded anew each time.
//
// Texts are kept for the items used lately, in two generations: lookups fill the young one; when
// it took `GENERATION_ITEMS` items or `GENERATION_CHARS` characters it becomes the old one and
// the old one is dropped, and a text found in the old one moves to the young. So at most two
// generations' texts are held (8,192 items, 16 Mi UTF-16 characters), whatever the sessions
// hold. The generations are weak: a text never keeps its item alive (an unloaded session's items
// go, and what a worker keeps of them is sent again: kept-conversations.ts), and goes with it.

/** Items per generation. */
export const GENERATION_ITEMS = 4096;
/** UTF-16 characters of text per generation (up to 16 MiB as V8 holds two-byte strings). */
export const GENERATION_CHARS = 8 * 1024 * 1024;

let young = new WeakMap<object, string>();
let youngItems = 0;
let youngChars = 0;
let old = new WeakMap<object, string>();
let oldItems = 0;

function keep(item: object, text: string): void {
  if (youngItems >= GENERATION_ITEMS || youngChars + text.length > GENERATION_CHARS) {
    old = young;
    oldItems = youngItems;
    young = new WeakMap();
    youngItems = 0;
    youngChars = 0;
  }
  young.set(item, text);
  youngItems++;
  youngChars += text.length;
}

/**
 * The item's JSON text (`JSON.stringify(item)`), made once while the item is in use. `item`
 * must not change once frozen (a committed item never does).
 */
export function itemJson(item: object): string {
  let text = young.get(item);
  if (text !== undefined) return text;
  text = old.get(item);
  if (text === undefined) text = JSON.stringify(item);
  if (Object.isFrozen(item)) keep(item, text);
  return text;
}

/** Texts taken into the two generations, an upper bound of those held now (for tests). */
export function keptItemTexts(): number {
  return youngItems + oldItems;
}
