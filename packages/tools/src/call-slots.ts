import { type CallState, signalOf } from "./call-state";
import { type Release, Semaphore } from "./semaphore";
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
  const name = state.call.name;
  if (caps.limiter && !(await waitForSlot(state, caps.limiter.acquire(name, signalOf(state))))) return false;
  if (tool.shared && !(await takeSlot(state, tool.shared))) return false;
  if (tool.definition.concurrency !== undefined && !(await takeSlot(state, caps.perTool.of(tool))))
    return false;
  if (caps.session !== undefined) {
    const session = takeSlot(state, caps.session);
    if (session !== true && !(await session)) return false;
  }
  return true;
}

/** Takes a free slot at once (true), or waits for one (false when the wait was aborted). */
export function takeSlot(state: CallState, slots: Semaphore): true | Promise<boolean> {
  const release = slots.tryAcquire();
  if (release === undefined) return waitForSlot(state, slots.acquire(signalOf(state)));
  if (state.releases === undefined) state.releases = [release];
  else state.releases.push(release);
  return true;
}

async function waitForSlot(state: CallState, waiting: Promise<Release>): Promise<boolean> {
  let release: Release;
  try {
    release = await waiting;
  } catch {
    return false; // the wait was aborted by whoever ended the call
  }
  if (state.releases === undefined) state.releases = [release];
  else state.releases.push(release);
  if (state.settled) {
    releaseAll(state);
    return false;
  }
  return true;
}

/** Gives back every slot the call holds. */
export function releaseAll(state: CallState): void {
  const releases = state.releases;
  if (releases === undefined) return;
  state.releases = undefined;
  for (const release of releases) release();
}
