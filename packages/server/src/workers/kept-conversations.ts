import type { ConversationItem } from "@patchbay/protocol";
import { itemJson } from "../store/item-json";
import {
  type FittedHostedCall,
  fitHostedCall,
  type HostedCallFrame,
  hostedCallText,
} from "./fit-hosted-call";

/** What a worker asked to keep (`worker.hello.conversationCache`). */
export interface ConversationCacheLimits {
  sessions: number;
  /** Bytes of items as JSON (UTF-8). */
  bytes: number;
}

interface KeptItem {
  /**
   * The item as it was sent. Weak: what a worker keeps must not keep a session's items alive on
   * the server once the session has let them go (it was unloaded); such an item is sent again.
   */
  ref: WeakRef<ConversationItem>;
  readonly size: number;
  /** The last {@link KeptConversations.fit} whose conversation had it. */
  seen: number;
}

interface KeptSession {
  items: Map<string, KeptItem>;
  bytes: number;
}

/**
 * What one worker connection keeps of each session's conversation, as the server knows it, and
 * the `hosted.call` frames that send only the rest. The server decides everything: the worker
 * keeps exactly the items a frame's `conversationIds` names and drops what `forgetSessions` names
 * (or a frame without `conversationIds` names in `sessionId`), so both ends agree as long as the
 * frames arrive in order, which one socket guarantees. A new connection starts with nothing kept.
 *
 * Items are compared by identity first: a session's items are frozen and replaced whole when
 * they change, so an item that is the same object as the one kept is the same item. A session
 * loaded again (its turn ran with no one attached, then it was unloaded) has new objects for the
 * same items: those are compared by value while the old ones are still in memory, and sent again
 * once they are not (the server holds them weakly). So is every item of a call relayed from
 * another cluster node, which arrives as new objects.
 */
export class KeptConversations {
  /** Least recently called first. */
  readonly #sessions = new Map<string, KeptSession>();
  #bytes = 0;
  /** Sessions dropped here that the worker has not been told to drop yet. */
  #forget: string[] = [];
  /** Counts the calls fitted, to tell the items a call's conversation has from those it left. */
  #pass = 0;

  constructor(readonly limits: ConversationCacheLimits) {}

  /** Sessions kept now. */
  get size(): number {
    return this.#sessions.size;
  }

  /** Bytes of the items kept now, all sessions. */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * The call as it goes to this worker: its new and changed items sent, the others by id, within
   * `maxBytes`. When the session's items could not all be kept (more than the worker's `bytes`,
   * or a whole frame would not fit `maxBytes`), the conversation goes whole, as
   * {@link fitHostedCall} fits it, and nothing of the session is kept. The answer's frame must be
   * sent (or the connection dropped): what it says is kept is taken as kept.
   */
  fit(frame: HostedCallFrame, maxBytes: number): FittedHostedCall {
    const sessionId = frame.sessionId;
    const kept = this.#sessions.get(sessionId);
    if (kept) this.#drop(sessionId, kept);
    const window = frame.conversation;
    // Nothing to keep: the frame goes as to any worker, which then keeps nothing of the session.
    if (window.length === 0) return this.#whole(frame, maxBytes, kept !== undefined);
    // The kept map is brought to this call's conversation in place: a call allocates for the
    // items it sends, not for the whole conversation. (A call that ends up sending the whole
    // conversation keeps nothing, so a map left half changed is dropped with it.)
    const items = kept?.items ?? new Map<string, KeptItem>();
    const pass = ++this.#pass;
    const changed: ConversationItem[] = [];
    const encoded: string[] = [];
    let bytes = 0;
    let sentBytes = 0;
    for (const item of window) {
      const known = items.get(item.id);
      const sent = known?.ref.deref();
      if (sent !== undefined && (sent === item || sameJson(sent, item))) {
        // An equal copy (the session was loaded again) is kept from now on: the next call
        // compares by identity again, and the old copy can go.
        if (sent !== item) known!.ref = new WeakRef(item);
        known!.seen = pass;
        bytes += known!.size;
        continue;
      }
      const text = itemJson(item);
      changed.push(item);
      encoded.push(text);
      const size = Buffer.byteLength(text, "utf8");
      items.set(item.id, { ref: new WeakRef(item), size, seen: pass });
      bytes += size;
      sentBytes += size;
    }
    // What the conversation no longer has (it moved past its oldest items) is not kept.
    if (items.size > window.length)
      for (const [id, entry] of items) if (entry.seen !== pass) items.delete(id);
    // Kept only when the whole conversation would fit one frame (the items, their commas, and
    // the rest of the frame, which the delta's text below bounds): the worker's tools then see
    // what a frame without a cache would carry.
    if (bytes > this.limits.bytes || bytes + window.length > maxBytes) {
      return this.#whole(frame, maxBytes, kept !== undefined);
    }
    // Room for this session: the least recently called leave, and the worker is told.
    for (const [id, session] of this.#sessions) {
      if (this.#sessions.size < this.limits.sessions && this.#bytes + bytes <= this.limits.bytes) break;
      this.#drop(id, session);
      this.#forget.push(id);
    }
    const { conversation: _whole, ...rest } = frame;
    const head: Omit<HostedCallFrame, "conversation"> = {
      ...rest,
      conversationIds: window.map((item) => item.id),
      ...(this.#forget.length > 0 ? { forgetSessions: this.#forget } : {}),
    };
    const text = hostedCallText(head, encoded);
    // The frame as it would go whole (this one, plus the kept items it leaves out) must fit. A
    // UTF-16 code unit is at most 3 UTF-8 bytes: most frames are judged without encoding them.
    const left = maxBytes - (bytes - sentBytes) - window.length;
    if (text.length * 3 > left && Buffer.byteLength(text, "utf8") > left) {
      return this.#whole(frame, maxBytes, kept !== undefined);
    }
    this.#forget = [];
    this.#sessions.set(sessionId, { items, bytes });
    this.#bytes += bytes;
    return { ok: true, frame: { ...head, conversation: changed } as HostedCallFrame, text };
  }

  /**
   * The conversation whole: the worker drops what it kept of the session. `wasKept`: should the
   * frame not be sent (too large), the worker is told to forget the session with the next one.
   */
  #whole(frame: HostedCallFrame, maxBytes: number, wasKept: boolean): FittedHostedCall {
    const forget = this.#forget;
    const fitted = fitHostedCall(forget.length > 0 ? { ...frame, forgetSessions: forget } : frame, maxBytes);
    if (fitted.ok) this.#forget = [];
    else if (wasKept) forget.push(frame.sessionId);
    return fitted;
  }

  #drop(sessionId: string, session: KeptSession): void {
    this.#sessions.delete(sessionId);
    this.#bytes -= session.bytes;
  }
}

/** Whether two JSON values are equal (objects whatever the order of their keys). */
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameJson(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  let keys = 0;
  for (const key in left) {
    if (left[key] === undefined) continue;
    keys++;
    if (!sameJson(left[key], right[key])) return false;
  }
  for (const key in right) if (right[key] !== undefined) keys--;
  return keys === 0;
}
