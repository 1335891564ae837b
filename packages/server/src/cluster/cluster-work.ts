import type { DispatchWork, DispatchWorkReceipt, WorkElsewhere } from "../extensions/dispatch-seams";
import type { Logger } from "../observability/logger";
import type { Bus } from "./bus";
import { requestWatched } from "./owner-watch";

// Messages and incoming calls that come in on a node's inbound routes go to the node whose
// freest worker has the most free slots (docs/cluster.md, "Workers on any node"): the node that
// got the HTTP request asks that node to submit the work to its own router, and answers with
// its receipt (offered, queued or dropped), so the caller's 202 or 503 is the truth. While its
// answer is late, that node is watched (owner-watch.ts): one that has left the bus (right after a
// crash NATS may still hand the request to its dead connection) leaves the work here at once.

const workSubject = (node: string) => `patchbay.node.${node}.work`;

/** Options of {@link ClusterWork}. */
export interface ClusterWorkOptions {
  bus: Bus;
  nodeId: string;
  /** Free slots of every other live node's freest worker, per kind of work (its last heartbeat). */
  remoteRoom: () => ReadonlyMap<string, { messages: number; calls: number }>;
  isAlive: (nodeId: string) => boolean;
  logger: Logger;
  /** How long the node given the work may take to answer with its receipt (default 2 000 ms). */
  answerTimeoutMs?: number;
  /**
   * While an answer is late, how often to ask whether that node's process is still on the bus
   * (default 500 ms); one that is gone leaves the work here at once rather than at `answerTimeoutMs`.
   */
  probeIntervalMs?: number;
}

/** {@link WorkElsewhere} over the cluster's bus. */
export class ClusterWork implements WorkElsewhere {
  private stop: (() => void) | undefined;

  constructor(private readonly options: ClusterWorkOptions) {}

  async submit(
    work: DispatchWork,
    local: () => DispatchWorkReceipt,
    localRoom: number,
  ): Promise<DispatchWorkReceipt> {
    const kind = work.kind === "message" ? "messages" : "calls";
    let best: string | undefined;
    let bestRoom = localRoom;
    for (const [node, room] of this.options.remoteRoom()) {
      if (room[kind] > bestRoom && this.options.isAlive(node)) {
        best = node;
        bestRoom = room[kind];
      }
    }
    if (!best) return local();
    try {
      const answer = await requestWatched(this.options.bus, best, {
        subject: workSubject(best),
        data: JSON.stringify(work),
        timeoutMs: this.options.answerTimeoutMs ?? 2_000,
        probeMs: this.options.probeIntervalMs ?? 500,
      });
      return JSON.parse(answer) as DispatchWorkReceipt;
    } catch (error) {
      // That node did not answer, or is gone: this node's own workers take it.
      this.options.logger.warn("another node did not take inbound work; it stays here", {
        node: best,
        kind: work.kind,
        error,
      });
      return local();
    }
  }

  serve(local: (work: DispatchWork) => DispatchWorkReceipt): void {
    this.stop?.();
    this.stop = this.options.bus.subscribe(workSubject(this.options.nodeId), (message) => {
      let receipt: DispatchWorkReceipt;
      try {
        receipt = local(JSON.parse(message.data) as DispatchWork);
      } catch (error) {
        this.options.logger.error("inbound work from another node failed", { error });
        return;
      }
      message.reply(JSON.stringify(receipt));
    });
  }

  close(): void {
    this.stop?.();
    this.stop = undefined;
  }
}
