import type { CallState } from "./call-state";
import { type Release, Semaphore, type Waiter } from "./semaphore";
import type { CompiledTool } from "./tool-definition";
import type { ToolLimiter } from "./tool-limiter";

/** The caps a call of one executor may wait on, narrowest first (see `acquireSlots`). */
export interface SlotCaps {
  /** Process-wide per-tool caps shared with other executors. */
  readonly limiter: ToolLimiter | undefined;
  /** This executor's per-tool caps (`concurrency`). */
  readonly perTool: ToolSlots;
  /** This executor's session cap; undefined when the caller caps the calls it hands over. */
  readonly session: Semaphore | undefined;
}

/** One semaphore per registered tool with a `concurrency`, made on its first call. */
export class ToolSlots {
  readonly #perTool = new WeakMap<CompiledTool, Semaphore>();

  of(tool: CompiledTool): Semaphore {
    let slots = this.#perTool.get(tool);
    if (!slots) {
      slots = new Semaphore(tool.definition.concurrency!);
      this.#perTool.set(tool, slots);
    }
    return slots;
  }
}

/**
 * Takes every slot the call needs: true when it holds them all, false when a wait was aborted or
 * the call ended meanwhile (its slots are then given back). Narrowest caps first, so a call
 * waiting on its tool's cap holds no session slot meanwhile. A call with only the session cap and
 * a free slot gets it without a promise.
 */
export function acquireSlots(state: CallState, tool: CompiledTool, caps: SlotCaps): true | Promise<boolean> {
  if (caps.limiter === undefined && tool.shared === undefined && tool.definition.concurrency === undefined) {
    return caps.session === undefined ? true : takeSlot(state, caps.session);
  }
  return acquireCapped(state, tool, caps);
}

async function acquireCapped(state: CallState, tool: CompiledTool, caps: SlotCaps): Promise<boolean> {
  const limited = caps.limiter?.slots(state.call.name);
  if (limited && !(await takeSlot(state, limited))) return false;
  if (tool.shared && !(await takeSlot(state, tool.shared))) return false;
  if (tool.definition.concurrency !== undefined && !(await takeSlot(state, caps.perTool.of(tool))))
    return false;
  if (caps.session !== undefined) {
    const session = takeSlot(state, caps.session);
    if (session !== true && !(await session)) return false;
  }
  return true;
}

/**
 * Takes a free slot at once (true), or waits in line for one (false when the call ended first).
 * The wait needs no signal (an AbortSignal costs microseconds to make on Node 20, and most
 * waiting calls are never stopped): it sits in the call's slot list as a release that leaves the
 * queue until the slot is granted and gives the slot back after, so the call's end
 * (`releaseAll`) ends the wait either way.
 */
export function takeSlot(state: CallState, slots: Semaphore): true | Promise<boolean> {
  const release = slots.tryAcquire();
  if (release) {
    // A literal: `[]` then `push` grows the array to room for 17.
    if (state.releases === undefined) state.releases = [release];
    else state.releases.push(release);
    return true;
  }
  return new Promise<boolean>((resolve) => {
    let granted: Release | undefined;
    // The call's slot list holds this until it ends: the slot once granted, the line until then.
    const slot = () => {
      if (granted) granted();
      else {
        slots.leave(waiter);
        resolve(false);
      }
    };
    const waiter: Waiter = {
      grant: (release) => {
        granted = release;
        resolve(true);
      },
    };
    slots.tryAcquire(waiter); // no slot came free since just now: this queues it
    state.releases ??= [];
    state.releases.push(slot);
  });
}

/** Gives back every slot the call holds. */
export function releaseAll(state: CallState): void {
  const releases = state.releases;
  if (releases === undefined) return;
  state.releases = undefined;
  for (const release of releases) release();
}
