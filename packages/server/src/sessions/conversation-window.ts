import type { ConversationItem } from "@patchbay/protocol";
import { itemJson } from "../store/item-json";

/**
 * The part of a session's conversation a live session keeps in memory: the last `limit` items
 * (the store keeps all of them), cut where a user message starts so that a tool call is never
 * separated from the turn it belongs to. It also counts the whole conversation, items and bytes
 * (JSON), for the per-session quotas.
 */
// Shared by every window until its first item (an idle session's memory is mostly what it
// holds); frozen, so a write that forgot to replace them throws instead of sharing items.
const NO_ITEMS = Object.freeze([]) as unknown as ConversationItem[];
const NO_SIZES = Object.freeze([]) as unknown as number[];
/** The size of an item not measured yet (see {@link ConversationWindow.apply}). */
const UNMEASURED = -1;

export class ConversationWindow {
  private items: ConversationItem[] = NO_ITEMS;
  private sizes: number[] = NO_SIZES;
  /**
   * Absolute position of each item ever seen (those cut off keep theirs, below `dropped`); made
   * with the first item, since an idle session's memory is mostly what it holds.
   */
  private index: Map<string, number> | undefined;
  private dropped = 0;
  /** Bytes of the items measured so far; {@link byteCount} measures the rest first. */
  private bytes = 0;
  /**
   * Absolute positions of held items whose size is {@link UNMEASURED}: an item is measured when
   * the size is read or it is cut off, not at every change (a call's item changes three or four
   * times in a turn, and a quota reads the size once per message).
   */
  private unmeasured: number[] = NO_SIZES;
  /** The lowest position added or replaced since {@link takeChangedFrom} was last called. */
  private changedFrom = Number.POSITIVE_INFINITY;

  constructor(
    items: readonly ConversationItem[],
    private limit = Number.POSITIVE_INFINITY,
  ) {
    for (const item of items) this.apply(item);
    this.measure();
  }

  /** Items in the whole conversation, including those no longer in memory. */
  get itemCount(): number {
    return this.dropped + this.items.length;
  }

  /** Bytes of the whole conversation as JSON (items cut off count as they were last seen). */
  get byteCount(): number {
    this.measure();
    return this.bytes;
  }

  /** Whether items were cut off (then the store has the full conversation). */
  get partial(): boolean {
    return this.dropped > 0;
  }

  /** The absolute position of the first item held (items cut off keep theirs, below it). */
  get start(): number {
    return this.dropped;
  }

  /** The absolute position after the last item. */
  get end(): number {
    return this.dropped + this.items.length;
  }

  /** The item at an absolute position, when it is held. */
  at(position: number): ConversationItem | undefined {
    return position < this.dropped ? undefined : this.items[position - this.dropped];
  }

  /** The absolute position of the item with this id, when it is held. */
  position(id: string): number | undefined {
    const at = this.index?.get(id);
    return at === undefined || at < this.dropped ? undefined : at;
  }

  /** The lowest position added or replaced since the last call (`Infinity` when none); forgets it. */
  takeChangedFrom(): number {
    const from = this.changedFrom;
    this.changedFrom = Number.POSITIVE_INFINITY;
    return from;
  }

  setLimit(limit: number): void {
    this.limit = Math.max(1, limit);
    this.trim();
  }

  all(): ConversationItem[] {
    return this.items.slice();
  }

  last(count: number): ConversationItem[] {
    return count <= 0 ? [] : this.items.slice(-count);
  }

  get(id: string): ConversationItem | undefined {
    const at = this.index?.get(id);
    return at === undefined || at < this.dropped ? undefined : this.items[at - this.dropped];
  }

  /** Adds an item, or replaces the one with the same id. */
  apply(item: ConversationItem): void {
    this.index ??= new Map();
    const at = this.index.get(item.id);
    if (at === undefined) {
      if (this.items === NO_ITEMS) {
        this.items = [];
        this.sizes = [];
      }
      const position = this.dropped + this.items.length;
      if (position < this.changedFrom) this.changedFrom = position;
      this.index.set(item.id, position);
      this.items.push(item);
      this.sizes.push(UNMEASURED);
      this.markUnmeasured(position);
      this.trim();
      return;
    }
    if (at < this.dropped) return; // cut off: the store has it
    if (at < this.changedFrom) this.changedFrom = at;
    const offset = at - this.dropped;
    this.items[offset] = item;
    const size = this.sizes[offset]!;
    if (size === UNMEASURED) return;
    this.bytes -= size;
    this.sizes[offset] = UNMEASURED;
    this.markUnmeasured(at);
  }

  private markUnmeasured(position: number): void {
    if (this.unmeasured === NO_SIZES) this.unmeasured = [];
    this.unmeasured.push(position);
  }

  /** Measures the held items not measured yet (JSON length, as a quota counts them). */
  private measure(): void {
    if (this.unmeasured.length === 0) return;
    for (const position of this.unmeasured) {
      const offset = position - this.dropped;
      if (offset < 0 || this.sizes[offset] !== UNMEASURED) continue; // cut off (measured then), or twice
      const size = itemJson(this.items[offset]!).length;
      this.sizes[offset] = size;
      this.bytes += size;
    }
    this.unmeasured = NO_SIZES;
  }

  private trim(): void {
    if (this.items.length <= this.limit) return;
    let cut = this.items.length - this.limit;
    // Start the window at a user message when one is near, so no call loses its turn.
    const latest = this.items.length - Math.ceil(this.limit / 2);
    let boundary = cut;
    while (boundary < latest && !isUserMessage(this.items[boundary])) boundary++;
    if (boundary < latest) cut = boundary;
    // Items cut off count as they were last seen: measure them while they are held.
    this.measure();
    this.items = this.items.slice(cut);
    this.sizes = this.sizes.slice(cut);
    this.dropped += cut;
  }
}

function isUserMessage(item: ConversationItem | undefined): boolean {
  return item?.type === "message" && item.role === "user";
}
