import type { SessionEvent } from "@patchbay/protocol";
import type { SessionChange } from "../store/store";

// A session's queue of changes waiting to be written: which consecutive ones share a
// transaction, joined as one change, and how each gets its own events back.

/** A change waiting to be written, and the promise it settles. */
export interface QueuedChange {
  change: SessionChange;
  resolve: (events: SessionEvent[] | null) => void;
  reject: (error: unknown) => void;
}

/** Consecutive changes that `joins` lets share a transaction, each group as one change. */
export function joinedGroups(
  queued: QueuedChange[],
  joins: (change: SessionChange, next: SessionChange) => boolean,
): { group: QueuedChange[]; change: SessionChange }[] {
  const groups: { group: QueuedChange[]; change: SessionChange }[] = [];
  let i = 0;
  while (i < queued.length) {
    const group = [queued[i]!];
    let change = queued[i]!.change;
    let owned = false;
    for (i++; i < queued.length && joins(change, queued[i]!.change); i++) {
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

/** Each change of a written group gets its own events (null for all when it was a duplicate). */
export function resolveGroup(group: QueuedChange[], events: SessionEvent[] | null): void {
  let start = 0;
  for (const { change, resolve } of group) {
    const count = change.events?.length ?? 0;
    resolve(events === null ? null : events.slice(start, start + count));
    start += count;
  }
}

const LISTS = ["events", "items", "pendingCalls", "settledCalls", "approvals"] as const;

/** A copy of `change` whose lists are its own, to append to. */
function ownedCopy(change: SessionChange): SessionChange {
  const copy: SessionChange = { ...change };
  for (const key of LISTS) {
    const list = change[key];
    if (list) (copy as Record<string, unknown[]>)[key] = [...list];
  }
  return copy;
}

/** `next` appended to `change` (an owned copy), as one change (see `SessionLog.joins` for when). */
function appendChange(change: SessionChange, next: SessionChange): void {
  for (const key of LISTS) {
    const more = next[key] as unknown[] | undefined;
    if (!more) continue;
    const list = change[key] as unknown[] | undefined;
    if (list) for (const entry of more) list.push(entry);
    else (change as Record<string, unknown[]>)[key] = [...more];
  }
  if (next.turn) change.turn = next.turn;
  if (next.pageTools) change.pageTools = next.pageTools;
}
