import type { GroupedWrite, GroupedWriteResult, Store } from "../store/store";

/** A change ready for the store, and what to do with its outcome. */
export interface PreparedWrite extends GroupedWrite {
  settle(outcome: GroupedWriteResult): void;
}

/** A session log with changes waiting: it hands them over, in order, when the group is written. */
export interface GroupCommitMember {
  takeWrites(): PreparedWrite[];
}

/**
 * Group commit across sessions: the changes every session queues in one turn of the event loop
 * are written in one transaction at its end (`Store.commitMany`), each still all-or-nothing and
 * in its session's order. A transaction costs far more than its rows, and each session waiting
 * for its own would write once per change; here 64 sessions (or 64 page tool calls of one)
 * delivered in one tick cost one. A session's change is applied, broadcast and resolved after
 * the transaction that holds it, so "in the log before it is sent" is kept.
 */
export class GroupCommit {
  private readonly waiting = new Set<GroupCommitMember>();
  private scheduled = false;
  /** Groups are written one after another, so a session's later changes land after its earlier. */
  private running: Promise<void> = Promise.resolve();

  constructor(private readonly commitMany: NonNullable<Store["commitMany"]>) {}

  /** `member` has changes to write: they go in this turn's group. */
  schedule(member: GroupCommitMember): void {
    this.waiting.add(member);
    if (this.scheduled) return;
    this.scheduled = true;
    // Once this turn's callback and every promise job it started have queued theirs (a
    // microtask queues a tick, which runs after the microtask queue is drained).
    queueMicrotask(() =>
      process.nextTick(() => {
        this.running = this.running.then(() => this.write());
      }),
    );
  }

  private async write(): Promise<void> {
    this.scheduled = false;
    const writes: PreparedWrite[] = [];
    // Taken before their writes are: a member may hold some back for the next group (schedule).
    const members = [...this.waiting];
    this.waiting.clear();
    for (const member of members) writes.push(...member.takeWrites());
    if (writes.length === 0) return;
    let outcomes: GroupedWriteResult[];
    try {
      outcomes = await this.commitMany(writes);
    } catch (error) {
      outcomes = writes.map(() => ({ ok: false, error }));
    }
    for (let i = 0; i < writes.length; i++) {
      try {
        writes[i]!.settle(outcomes[i] ?? { ok: false, error: new Error("the store returned no outcome") });
      } catch {
        // settle reports its own failures; one session's must not stop the others'.
      }
    }
  }
}

const groups = new WeakMap<Store, GroupCommit>();

/** The group commit of a store that can write groups (one per store), or undefined. */
export function groupCommitFor(store: Store): GroupCommit | undefined {
  if (typeof store.commitMany !== "function") return undefined;
  let group = groups.get(store);
  if (!group) {
    group = new GroupCommit((writes) => store.commitMany!(writes));
    groups.set(store, group);
  }
  return group;
}
