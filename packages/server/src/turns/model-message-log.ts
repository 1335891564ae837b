import type { ModelMessage } from "@patchbay/models";
import type { ConversationItem } from "@patchbay/protocol";
import { type ItemAt, pushSegment, segmentEnd } from "./model-messages";

/**
 * The conversation a {@link ModelMessageLog} reads, by absolute position (items cut off the front
 * of a bounded window keep their positions, below `start`).
 */
export interface ConversationSource {
  /** The position of the first item held. */
  readonly start: number;
  /** The position after the last item. */
  readonly end: number;
  at(position: number): ConversationItem | undefined;
  /** The position of the item with this id, when it is held. */
  position(id: string): number | undefined;
  /** The lowest position added or replaced since the last call (`Infinity` when none); forgets it. */
  takeChangedFrom(): number;
}

/**
 * The model's messages of a session, kept as its conversation changes instead of rebuilt from all
 * of it every round: the messages come in segments (a message, an assistant message with its batch
 * of calls, a batch of calls; see `segmentEnd`), and a read rebuilds only the segments from the
 * first changed item on (in a turn, the last one or two). What it gives equals
 * `toModelMessages(instructions, conversation)`, which stays the rule: the segments are made by the
 * same functions, and a session loaded from the store starts with nothing built.
 */
export class ModelMessageLog {
  private readonly messages: ModelMessage[] = [];
  /** Where each built segment starts: its first item's position and its first message's index. */
  private segmentItems: number[] = [];
  private segmentMessages: number[] = [];
  /** Items before this position are built. */
  private builtTo: number;

  constructor(private readonly source: ConversationSource) {
    this.builtTo = source.start;
  }

  /**
   * The messages for the model, the agent's instructions first: a new array each time (the
   * messages in it are shared and never changed). `overrides` are items the conversation will hold
   * once they are written (a call's final item, a message whose turn started before its commit),
   * read in place of the ones it holds now, or after its last item when it holds none by their id.
   */
  read(instructions: string, overrides: readonly ConversationItem[] = []): ModelMessage[] {
    this.sync();
    let from = Number.POSITIVE_INFINITY;
    if (overrides.length > 0) {
      const byPosition = new Map<number, ConversationItem>();
      let end = this.source.end;
      for (const item of overrides) {
        const position = this.source.position(item.id) ?? end++;
        byPosition.set(position, item);
        from = Math.min(from, position);
      }
      this.truncate(from);
      this.build((position) => byPosition.get(position) ?? this.source.at(position), end);
    }
    const messages: ModelMessage[] = instructions.trim() ? [{ role: "system", content: instructions }] : [];
    for (const message of this.messages) messages.push(message);
    // The overrides are not the conversation's yet: the next read builds those segments from it.
    if (from !== Number.POSITIVE_INFINITY) this.truncate(from);
    return messages;
  }

  /** Brings the built segments up to the conversation: items cut off, replaced or added. */
  private sync(): void {
    const start = this.source.start;
    if (this.segmentItems.length > 0 && this.segmentItems[0]! < start) this.dropFront(start);
    if (this.segmentItems.length === 0) this.builtTo = Math.max(this.builtTo, start);
    const changed = this.source.takeChangedFrom();
    if (changed < this.builtTo) this.truncate(changed);
    // An item added after the last segment may belong to it (a call after its message).
    const last = this.segmentItems.length - 1;
    if (this.builtTo < this.source.end && last >= 0) this.truncate(this.segmentItems[last]!);
    this.build((position) => this.source.at(position));
  }

  /** Forgets the segments of items the window cut off (all of them when it cut one in two). */
  private dropFront(start: number): void {
    let k = 0;
    while (k < this.segmentItems.length && this.segmentItems[k]! < start) k++;
    if (k === this.segmentItems.length || this.segmentItems[k] !== start) {
      this.messages.length = 0;
      this.segmentItems = [];
      this.segmentMessages = [];
      this.builtTo = start;
      return;
    }
    const offset = this.segmentMessages[k]!;
    this.messages.splice(0, offset);
    this.segmentItems = this.segmentItems.slice(k);
    this.segmentMessages = this.segmentMessages.slice(k).map((index) => index - offset);
  }

  /**
   * Drops the segments from the one holding `position` on. The segment before it goes too when
   * `position` starts a segment: where a segment ends depends on the item after it.
   */
  private truncate(position: number): void {
    let k = this.segmentItems.length - 1;
    while (k >= 0 && this.segmentItems[k]! > position) k--;
    if (k > 0 && this.segmentItems[k] === position) k--;
    if (k < 0) k = 0;
    if (k >= this.segmentItems.length) return;
    this.messages.length = this.segmentMessages[k]!;
    this.builtTo = this.segmentItems[k]!;
    this.segmentItems.length = k;
    this.segmentMessages.length = k;
  }

  private build(at: ItemAt, end = this.source.end): void {
    for (let i = this.builtTo; i < end; ) {
      const next = segmentEnd(at, i, end);
      this.segmentItems.push(i);
      this.segmentMessages.push(this.messages.length);
      pushSegment(this.messages, at, i, next);
      i = next;
    }
    this.builtTo = end;
  }
}
