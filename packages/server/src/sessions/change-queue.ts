import type { SessionEvent } from "@patchbay/protocol";
import type { SessionChange } from "../store/store";

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

/**
 * Consecutive changes that `joins` lets share a transaction, each group as one change (the first
 * `limit` groups).
 */
export function joinedGroups(
  queued: QueuedChange[],
  joins: (change: SessionChange, next: SessionChange, head: QueuedChange) => boolean,
  limit = Number.POSITIVE_INFINITY,
): { group: QueuedChange[]; change: SessionChange }[] {
  const groups: { group: QueuedChange[]; change: SessionChange }[] = [];
  let i = 0;
  while (i < queued.length && groups.length < limit) {
    const head = queued[i]!;
    const group = [head];
    let change = head.change;
    let owned = false;
    for (i++; i < queued.length && joins(change, queued[i]!.change, head); i++) {
      // The first join copies; later ones append to the copy (linear in the group, not quadratic).
      if (!owned) change = ownedCopy(change);
      owned = true;
      appendChange(change, queued[i]!.change);
      group.push(queued[i]!);
    }
    groups.push({ group, change });
  }
  return groups;
}

/**
 * Each change of a written group gets its own events (null for all when it was a duplicate; a
 * duplicate admission's message gets null and the changes joined to it are rejected, since its
 * turn must not go on).
 */
export function resolveGroup(group: QueuedChange[], events: SessionEvent[] | null): void {
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

/** `next` appended to `change` (an owned copy), as one change (see `SessionLog.joins` for when). */
function appendChange(change: SessionChange, next: SessionChange): void {
  if (next.events) change.events = appended(change.events, next.events);
  if (next.items) change.items = appended(change.items, next.items);
  if (next.pendingCalls) change.pendingCalls = appended(change.pendingCalls, next.pendingCalls);
  if (next.settledCalls) change.settledCalls = appended(change.settledCalls, next.settledCalls);
  if (next.approvals) change.approvals = appended(change.approvals, next.approvals);
  if (next.turn) change.turn = next.turn;
  if (next.pageTools) change.pageTools = next.pageTools;
}

/** `more` pushed onto `list` (an owned one), or a copy of `more` when there is no list yet. */
function appended<T>(list: T[] | undefined, more: readonly T[]): T[] {
  if (!list) return more.slice();
  for (let i = 0; i < more.length; i++) list.push(more[i]!);
  return list;
}
