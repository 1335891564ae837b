import type { SessionEvent } from "@patchbay/protocol";
import type { EventDraft, SessionChange } from "../store/store";

// A session's queue of changes waiting to be written: which consecutive ones share a
// transaction, joined as one change, and how each gets its own events back.

/**
 * A message's change whose command id was checked new before it was queued (see
 * `SessionLog.commit`): the changes its turn queues after it may share its transaction, and each
 * change queued while it is unwritten is written only once it was (`after`).
 */
export interface Admission {
  /** `undefined` while unwritten; then whether it was written, or why not. */
  outcome: { written: true } | { written: false; error: unknown } | undefined;
}

/** A change waiting to be written, and the promise it settles. */
export interface QueuedChange {
  change: SessionChange;
  resolve: (events: SessionEvent[] | null) => void;
  reject: (error: unknown) => void;
  /** The change is a message's whose command id was checked new: the admission it decides. */
  admits?: Admission;
  /** Queued while this admission was undecided: written only if its message was. */
  after?: Admission;
}

/** Consecutive queued changes written as one. */
export interface JoinedChange {
  group: QueuedChange[];
  change: SessionChange;
  /**
   * Where each change of the group has its events in `change.events`, when an item's update took
   * the place of an earlier one (see {@link appendEvents}); without it, each change's events
   * follow the events of the change before it.
   */
  slots?: number[][];
}

/**
 * Consecutive changes that `joins` lets share a transaction, each group as one change (the first
 * `limit` groups).
 */
export function joinedGroups(
  queued: QueuedChange[],
  joins: (change: SessionChange, next: SessionChange, head: QueuedChange) => boolean,
  limit = Number.POSITIVE_INFINITY,
): JoinedChange[] {
  const groups: JoinedChange[] = [];
  let i = 0;
  while (i < queued.length && groups.length < limit) {
    const head = queued[i]!;
    const group = [head];
    let change = head.change;
    let owned = false;
    let slots: number[][] | undefined;
    for (i++; i < queued.length && joins(change, queued[i]!.change, head); i++) {
      // The first join copies; later ones append to the copy (linear in the group, not quadratic).
      if (!owned) change = ownedCopy(change);
      owned = true;
      const next = queued[i]!.change;
      const start = change.events?.length ?? 0;
      const placed = appendChange(change, next);
      if (placed) {
        slots ??= followingSlots(group);
        slots.push(placed);
      } else slots?.push(range(start, next.events?.length ?? 0));
      group.push(queued[i]!);
    }
    groups.push(slots ? { group, change, slots } : { group, change });
  }
  return groups;
}

/**
 * Each change of a written group gets its own events (null for all when it was a duplicate; a
 * duplicate admission's message gets null and the changes joined to it are rejected, since its
 * turn must not go on). With `slots` (see {@link JoinedChange}), an update that took another's
 * place is the event of both changes.
 */
export function resolveGroup(
  group: QueuedChange[],
  events: SessionEvent[] | null,
  slots?: readonly (readonly number[])[],
): void {
  const admission = group[0]?.admits;
  if (admission)
    decide(admission, events === null ? { written: false, error: duplicateAdmission() } : undefined);
  if (events === null) {
    for (let i = 0; i < group.length; i++) {
      if (admission && i > 0) group[i]!.reject(duplicateAdmission());
      else group[i]!.resolve(null);
    }
    return;
  }
  if (slots) {
    for (let k = 0; k < group.length; k++) group[k]!.resolve(slots[k]!.map((at) => events[at]!));
    return;
  }
  let start = 0;
  for (const { change, resolve } of group) {
    const count = change.events?.length ?? 0;
    resolve(events.slice(start, start + count));
    start += count;
  }
}

/** A written group failed: an admission it carries learns why, then every change is rejected. */
export function rejectGroup(group: QueuedChange[], error: unknown): void {
  const admission = group[0]?.admits;
  if (admission) decide(admission, { written: false, error });
  for (const { reject } of group) reject(error);
}

/**
 * The changes still to write, in order: those queued behind an admission that failed are
 * rejected instead (their turn's message is not in the log).
 */
export function withoutFailedAdmissions(queued: QueuedChange[]): QueuedChange[] {
  if (!queued.some((entry) => entry.after?.outcome?.written === false)) return queued;
  const rest: QueuedChange[] = [];
  for (const entry of queued) {
    const outcome = entry.after?.outcome;
    if (!outcome || outcome.written) {
      rest.push(entry);
      continue;
    }
    // A message behind it not written either: what was made behind that one is rejected too.
    if (entry.admits) decide(entry.admits, outcome);
    entry.reject(outcome.error);
  }
  return rest;
}

/** Whether the group waits for an admission still undecided (its message is being written). */
export function waitsForAdmission(group: readonly QueuedChange[]): boolean {
  const after = group[0]?.after;
  return after !== undefined && after.outcome === undefined;
}

function decide(admission: Admission, failed: { written: false; error: unknown } | undefined): void {
  admission.outcome ??= failed ?? { written: true };
}

function duplicateAdmission(): Error {
  return new Error("the message this change followed was a duplicate, so its turn did not start");
}

/**
 * A copy of `change` whose lists are its own, to append to. The lists are named one by one, not
 * looped over by key: a keyed read or write over changes of many shapes is megamorphic in V8,
 * and this runs for every change joined to another (most writes of a turn).
 */
function ownedCopy(change: SessionChange): SessionChange {
  const copy: SessionChange = { ...change };
  if (change.events) copy.events = change.events.slice();
  if (change.items) copy.items = change.items.slice();
  if (change.pendingCalls) copy.pendingCalls = change.pendingCalls.slice();
  if (change.settledCalls) copy.settledCalls = change.settledCalls.slice();
  if (change.approvals) copy.approvals = change.approvals.slice();
  return copy;
}

/**
 * `next` appended to `change` (an owned copy), as one change (see `SessionLog.joins` for when).
 * Returns where `next`'s events went, when one took an earlier event's place (see
 * {@link appendEvents}).
 */
function appendChange(change: SessionChange, next: SessionChange): number[] | undefined {
  let placed: number[] | undefined;
  if (next.events) {
    if (change.events) placed = appendEvents(change.events, next.events);
    else change.events = next.events.slice();
  }
  if (next.items) change.items = appended(change.items, next.items);
  if (next.pendingCalls) change.pendingCalls = appended(change.pendingCalls, next.pendingCalls);
  if (next.settledCalls) change.settledCalls = appended(change.settledCalls, next.settledCalls);
  if (next.approvals) change.approvals = appended(change.approvals, next.approvals);
  if (next.turn) change.turn = next.turn;
  if (next.pageTools) change.pageTools = next.pageTools;
  return placed;
}

/**
 * `more` appended to `events` (an owned list), but for one rule: a `conversation.updated` of an
 * item that an earlier change of the same transaction already updated, with nothing after that
 * update but updates of other items, takes the earlier update's place instead. The item is sent
 * whole each time (docs/protocol.md), so the one update says all the two did, at the place its
 * item first appeared: a tool call checked and started in the tick it was made goes out once, as
 * `running`, not as `pending` and then `running` in the same write (one event fewer a call, for
 * the store, every socket and every client). An update with anything else after it (a
 * `tool.call`, a progress line, an approval, some text) keeps its own place, so no event is ever
 * read before the state of the item it names. The transaction's items say the same: the store
 * writes an item's latest state at the place it first has in the change (`latestItems`).
 * Returns where each of `more` went, or `undefined` when all went to the end.
 */
function appendEvents(events: EventDraft[], more: readonly EventDraft[]): number[] | undefined {
  const start = events.length;
  let placed: number[] | undefined;
  for (let k = 0; k < more.length; k++) {
    const event = more[k]!;
    const at = event.type === "conversation.updated" ? updateAtEnd(events, event.item.id, start) : -1;
    if (at >= 0) {
      events[at] = event;
      placed ??= range(start, k);
      placed.push(at);
    } else {
      placed?.push(events.length);
      events.push(event);
    }
  }
  return placed;
}

/**
 * The index before `before` of the update of item `id` among the `conversation.updated` events at
 * the end of `events`, or -1.
 */
function updateAtEnd(events: readonly EventDraft[], id: string, before: number): number {
  for (let j = events.length - 1; j >= 0; j--) {
    const event = events[j]!;
    if (event.type !== "conversation.updated") return -1;
    if (j < before && event.item.id === id) return j;
  }
  return -1;
}

/** The slots of a group whose events all followed one another. */
function followingSlots(group: readonly QueuedChange[]): number[][] {
  let start = 0;
  return group.map(({ change }) => {
    const count = change.events?.length ?? 0;
    start += count;
    return range(start - count, count);
  });
}

function range(start: number, count: number): number[] {
  const out = new Array<number>(count);
  for (let i = 0; i < count; i++) out[i] = start + i;
  return out;
}

/** `more` pushed onto `list` (an owned one), or a copy of `more` when there is no list yet. */
function appended<T>(list: T[] | undefined, more: readonly T[]): T[] {
  if (!list) return more.slice();
  for (let i = 0; i < more.length; i++) list.push(more[i]!);
  return list;
}
