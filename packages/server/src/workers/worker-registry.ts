import type { HostedAgent, ServerToWorkerFrame, ToolSpec } from "@patchbay/protocol";
import { firstByName } from "../tools/first-by-name";
import type { KeptConversations } from "./kept-conversations";

/**
 * A dispatch worker connected on `/v1/worker`, as the server keeps track of it. `reserved` is the
 * server's own count of the work it gave the worker: a slot is taken when work is offered, not
 * when the worker reports its load, so two offers can never both take a last slot.
 */
export interface ConnectedWorker {
  readonly id: string;
  /** How many messages and calls it runs at once, as it last said (0 while it drains). */
  capacity: number;
  readonly handles: { messages: boolean; calls: boolean };
  /** Agent name -> the tools it hosts for that agent and its tool timeout. */
  /** Replaced whole by a `worker.hosts` frame (tools registered after the worker started). */
  hosts: ReadonlyMap<string, { tools: ReadonlyMap<string, ToolSpec>; toolTimeoutMs?: number }>;
  /** Work ids offered to it or running on it. */
  readonly reserved: Set<string>;
  /** Hosted call ids it runs. */
  readonly calls: Set<string>;
  /** When it was last given something, to spread ties between equally free workers. */
  lastGivenAt: number;
  /** The largest frame it accepts (`worker.hello.maxFrameBytes`, 1 MiB when it did not say). */
  readonly maxFrameBytes: number;
  /** What it keeps of sessions' conversations, when its hello asked to keep them. */
  readonly conversations?: KeptConversations;
  /** Sends a frame; `text` is the frame already encoded, when the caller had to measure it. */
  send(frame: ServerToWorkerFrame, text?: string): void;
  /** Cuts the socket (a replaced or dead worker). */
  terminate(): void;
  /** Closes the socket with a close code and reason (a replaced worker); cut when absent. */
  close?(code: number, reason: string): void;
}

type WorkerHosts = ConnectedWorker["hosts"];

/** Agents whose tool lists {@link WorkerRegistry.specs} keeps at once (a bound, not a tuning). */
const MAX_SPEC_LISTS = 1024;

/** Builds the `hosts` map of a {@link ConnectedWorker} from what its hello said. */
export function hostsFromHello(
  hosted: readonly HostedAgent[],
): Map<string, { tools: Map<string, ToolSpec>; toolTimeoutMs?: number }> {
  const hosts = new Map<string, { tools: Map<string, ToolSpec>; toolTimeoutMs?: number }>();
  for (const agent of hosted) {
    const entry = hosts.get(agent.agent) ?? { tools: new Map<string, ToolSpec>() };
    for (const tool of agent.tools) entry.tools.set(tool.name, tool);
    if (agent.toolTimeoutMs !== undefined) {
      entry.toolTimeoutMs = Math.max(entry.toolTimeoutMs ?? 0, agent.toolTimeoutMs);
    }
    hosts.set(agent.agent, entry);
  }
  return hosts;
}

/**
 * The dispatch workers connected now, and the choice of which one gets the next piece of work or
 * the next hosted tool call.
 */
export class WorkerRegistry {
  readonly #workers = new Map<string, ConnectedWorker>();
  /** Each agent's tool list as {@link specs} last made it, with the workers' hosts it read. */
  readonly #specs = new Map<string, { hosts: WorkerHosts[]; specs: ToolSpec[] }>();

  /** Adds a worker; returns the worker it replaces (same id, an older socket), if any. */
  add(worker: ConnectedWorker): ConnectedWorker | undefined {
    const previous = this.#workers.get(worker.id);
    this.#workers.set(worker.id, worker);
    return previous === worker ? undefined : previous;
  }

  /** Removes the worker if it is still the one registered under its id. */
  remove(worker: ConnectedWorker): boolean {
    if (this.#workers.get(worker.id) !== worker) return false;
    this.#workers.delete(worker.id);
    return true;
  }

  get(id: string): ConnectedWorker | undefined {
    return this.#workers.get(id);
  }

  /** Whether `worker` is the one registered under its id (not replaced, not gone). */
  isCurrent(worker: ConnectedWorker): boolean {
    return this.#workers.get(worker.id) === worker;
  }

  all(): ConnectedWorker[] {
    return [...this.#workers.values()];
  }

  get size(): number {
    return this.#workers.size;
  }

  /** Free slots of a worker. */
  free(worker: ConnectedWorker): number {
    return Math.max(0, worker.capacity - worker.reserved.size);
  }

  /** Whether any connected worker handles this kind of work, full or not. */
  handles(kind: "message" | "call"): boolean {
    for (const worker of this.#workers.values()) {
      if (kind === "message" ? worker.handles.messages : worker.handles.calls) return true;
    }
    return false;
  }

  /**
   * The worker with the most free slots that handles `kind`, skipping `exclude`; ties go to the
   * one given work longest ago. Undefined when every such worker is full.
   */
  pickForWork(
    kind: "message" | "call",
    exclude: ReadonlySet<string> = new Set(),
  ): ConnectedWorker | undefined {
    let best: ConnectedWorker | undefined;
    let bestFree = 0;
    for (const worker of this.#workers.values()) {
      if (exclude.has(worker.id)) continue;
      if (!(kind === "message" ? worker.handles.messages : worker.handles.calls)) continue;
      const free = this.free(worker);
      if (free <= 0) continue;
      if (!best || free > bestFree || (free === bestFree && worker.lastGivenAt < best.lastGivenAt)) {
        best = worker;
        bestFree = free;
      }
    }
    return best;
  }

  /** The workers hosting `tool` for `agent`. */
  hostsOf(agent: string, tool: string): ConnectedWorker[] {
    return this.all().filter((worker) => worker.hosts.get(agent)?.tools.has(tool) === true);
  }

  /**
   * The worker hosting `tool` with the fewest calls outstanding, skipping `exclude`. Every hosted
   * call asks, so it walks the workers without building a list of them (or an empty set).
   */
  pickForTool(agent: string, tool: string, exclude?: ReadonlySet<string>): ConnectedWorker | undefined {
    let best: ConnectedWorker | undefined;
    for (const worker of this.#workers.values()) {
      if (worker.hosts.get(agent)?.tools.has(tool) !== true) continue;
      if (exclude?.has(worker.id)) continue;
      if (
        !best ||
        worker.calls.size < best.calls.size ||
        (worker.calls.size === best.calls.size && worker.lastGivenAt < best.lastGivenAt)
      ) {
        best = worker;
      }
    }
    return best;
  }

  /**
   * Every tool hosted for `agent`, one spec per name (the first worker's, in connection order).
   * Frozen and shared: every model round and every call asks, so the list is made again only
   * when the workers or what one hosts changed since (a worker's `hosts` is replaced whole, never
   * edited: `worker.hosts` frames, hostsFromHello).
   */
  specs(agent: string): ToolSpec[] {
    const known = this.#specs.get(agent);
    if (known && this.#sameHosts(known.hosts)) return known.specs;
    const hosts = [...this.#workers.values()].map((worker) => worker.hosts);
    const specs = Object.freeze(
      firstByName(hosts.map((hosted) => hosted.get(agent)?.tools.values() ?? [])),
    ) as ToolSpec[];
    if (this.#specs.size >= MAX_SPEC_LISTS) this.#specs.clear();
    this.#specs.set(agent, { hosts, specs });
    return specs;
  }

  /** Whether the workers, in order, host exactly what they did when `hosts` was taken. */
  #sameHosts(hosts: readonly WorkerHosts[]): boolean {
    if (hosts.length !== this.#workers.size) return false;
    let i = 0;
    for (const worker of this.#workers.values()) if (worker.hosts !== hosts[i++]) return false;
    return true;
  }

  /** The longest `toolTimeoutMs` offered for `agent` by a worker hosting `tool`, if any offered one. */
  toolTimeoutMs(agent: string, tool: string): number | undefined {
    let longest: number | undefined;
    for (const worker of this.hostsOf(agent, tool)) {
      const timeout = worker.hosts.get(agent)?.toolTimeoutMs;
      if (timeout !== undefined) longest = Math.max(longest ?? 0, timeout);
    }
    return longest;
  }
}
