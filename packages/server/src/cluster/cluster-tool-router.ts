import type { ToolResult, ToolSpec } from "@patchbay/protocol";
import type {
  ApprovalAnswer,
  CancelReason,
  HoldAnswer,
  HostedToolRequest,
  HostedToolRouter,
  ToolCallHandlers,
} from "../extensions/dispatch-seams";
import type { Logger } from "../observability/logger";
import type { Bus } from "./bus";
import type { DirectLink, DirectLinks } from "./direct-links";

// Hosted tool calls across the nodes of a cluster (docs/cluster.md, "Workers on any node"). The
// owner of a session runs a call where the least busy worker hosting the tool is, across the
// cluster: on a worker connected to itself, or over the bus on another node, which runs it on its
// own router (which picks its worker with the most room and redelivers across its workers) and
// sends progress, holds, conditional approvals and the result back. The call id stays the
// idempotency key on every delivery, a delivery from a node that took a dead owner's session over
// included (it joins the call where it still runs). A call goes on a direct link to the other
// node when one is open (`direct-links.ts`), else over the bus, and everything about it (cancel,
// progress, holds, approvals, the result) follows it on the same path, so each path keeps its
// order; when the link closes, what is left goes over the bus. A call sent on a link that closes
// before its result came is sent again over the bus, same delivery: the worker's node joins it
// where it still runs (and asks again a question that may have been lost), and a finished one's
// result is the worker's, kept by call id. (About 400 lines on purpose: the owner's side and the
// worker node's side share the message types and the rule that a call's messages follow its path.)

/** Owner to worker node, on `patchbay.node.<node>.hosted`. */
type ToWorkerNode =
  | { kind: "call"; from: string; delivery: number; request: HostedToolRequest }
  | { kind: "cancel"; callId: string; reason: CancelReason }
  | { kind: "approval.answer"; callId: string; answer: ApprovalAnswer };

/** Worker node back to the owner, on `patchbay.node.<owner>.hosted.back`. */
type ToOwner =
  | { kind: "progress" | "say"; callId: string; delivery: number; text: string }
  | { kind: "hold"; callId: string; delivery: number }
  /** A conditional approval the call's worker asks for; answered with `approval.answer`. */
  | { kind: "approval"; callId: string; delivery: number; node: string }
  | { kind: "result"; callId: string; delivery: number; result: ToolResult };

const hostedSubject = (node: string) => `patchbay.node.${node}.hosted`;
const backSubject = (node: string) => `patchbay.node.${node}.hosted.back`;
/** The channels of the same messages on a direct link. */
const HOSTED = "hosted";
const BACK = "back";

interface RemoteCall {
  request: HostedToolRequest;
  handlers: ToolCallHandlers;
  node: string;
  /** Which delivery this is: answers of an older one are dropped. */
  delivery: number;
  cancelled: CancelReason | undefined;
  /** The direct link the call went on (undefined: the bus). */
  via: DirectLink | undefined;
  resolve: (result: ToolResult) => void;
}

/** A call this node runs for another node's session (the worker side). */
interface Serving {
  owner: string;
  delivery: number;
  cancelling: boolean;
  /** The link the delivery came on (undefined: the bus): its answers go back the same way. */
  via: DirectLink | undefined;
  /** The conditional approval asked of the owner, answered once (a new owner is asked again). */
  approval: { answer: Promise<ApprovalAnswer>; resolve: (answer: ApprovalAnswer) => void } | undefined;
}

/** Options of {@link ClusterToolRouter}. */
export interface ClusterToolRouterOptions {
  /** This node's own router (its connected workers). */
  local: HostedToolRouter;
  bus: Bus;
  /** Direct links to other nodes, tried before the bus for every message (none: the bus only). */
  links?: DirectLinks;
  nodeId: string;
  /** The hosted tools other live nodes' workers offer, per node and agent (their heartbeats). */
  remoteTools: () => ReadonlyMap<string, Readonly<Record<string, readonly ToolSpec[]>>>;
  isAlive: (nodeId: string) => boolean;
  /**
   * Calls outstanding on the least busy worker hosting the tool: here (live), and on another
   * node (its last heartbeat). A call goes where this is lowest, this node first on a tie.
   */
  localLoad?: (agent: string, tool: string) => number | undefined;
  remoteLoad?: (nodeId: string, agent: string, tool: string) => number | undefined;
  logger: Logger;
  /** How often calls on nodes that went silent are delivered elsewhere (default 500 ms). */
  checkIntervalMs?: number;
}

/**
 * A {@link HostedToolRouter} over every node's workers: a call goes to the node whose least busy
 * host of the tool has the fewest calls outstanding (this node's own workers on a tie). A call
 * whose worker node went silent is delivered again, same call id, to another node hosting the
 * tool (or back here). Holds are answered by the worker's node at once (accepted unless a cancel
 * is under way there) and reported to the owner's runner.
 */
export class ClusterToolRouter implements HostedToolRouter {
  private readonly remote = new Map<string, RemoteCall>();
  /** Calls outstanding per node they were sent to (so a route costs no walk over every call). */
  private readonly sentTo = new Map<string, number>();
  /** Per `remoteTools()` snapshot (kept by the node until a heartbeat changes it): agent and tool to the nodes hosting it. */
  private readonly hostingCache = new WeakMap<object, Map<string, string[]>>();
  /** Calls this node runs for other owners, by call id: the owner and its delivery. */
  private readonly serving = new Map<string, Serving>();
  private readonly stops: (() => void)[] = [];
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(private readonly options: ClusterToolRouterOptions) {
    this.stops.push(
      options.bus.subscribe(hostedSubject(options.nodeId), (message) =>
        this.fromOwner(message.data, undefined),
      ),
      options.bus.subscribe(backSubject(options.nodeId), (message) => this.fromWorkerNode(message.data)),
    );
    const links = options.links;
    if (links)
      this.stops.push(
        links.on(HOSTED, (data, link) => this.fromOwner(data, link)),
        links.on(BACK, (data) => this.fromWorkerNode(data)),
        links.onClose((link) => this.linkClosed(link)),
      );
    this.timer = setInterval(() => this.redeliverFromSilent(), options.checkIntervalMs ?? 500);
    this.timer.unref();
  }

  hasTool(agent: string, name: string): boolean {
    return this.options.local.hasTool(agent, name) || this.nodesHosting(agent, name).length > 0;
  }

  specs(agent: string): ToolSpec[] {
    const byName = new Map<string, ToolSpec>();
    for (const spec of this.options.local.specs(agent)) byName.set(spec.name, spec);
    for (const tools of this.options.remoteTools().values())
      for (const spec of tools[agent] ?? []) if (!byName.has(spec.name)) byName.set(spec.name, spec);
    return [...byName.values()];
  }

  timeoutCeilingMs(agent: string, tool: string): number | undefined {
    return this.options.local.timeoutCeilingMs?.(agent, tool);
  }

  call(request: HostedToolRequest, handlers: ToolCallHandlers): Promise<ToolResult> {
    const { agent, tool } = request;
    const here = this.options.local.hasTool(agent, tool)
      ? (this.options.localLoad?.(agent, tool) ?? 0)
      : undefined;
    const node = this.pickNode(agent, tool, undefined);
    // The worker with the most room across the cluster: here unless another node's has more.
    if (!node || (here !== undefined && here <= this.loadOf(node, agent, tool)))
      return this.options.local.call(request, handlers);
    return new Promise((resolve) => {
      // A call another node sent before it died goes on with its attempt numbers.
      const delivery = (request.attempt ?? 1) - 1;
      const call: RemoteCall = {
        request,
        handlers,
        node: "",
        delivery,
        cancelled: undefined,
        via: undefined,
        resolve,
      };
      // A call id sent again replaces its entry: the one replaced counts no more.
      const replaced = this.remote.get(request.callId);
      if (replaced) this.settled(replaced);
      this.remote.set(request.callId, call);
      this.send(call, node);
    });
  }

  cancel(callId: string, reason: CancelReason): void {
    const call = this.remote.get(callId);
    if (!call) {
      this.options.local.cancel(callId, reason);
      return;
    }
    call.cancelled = reason;
    this.alongCall(call, { kind: "cancel", callId, reason });
  }

  close(): void {
    clearInterval(this.timer);
    for (const stop of this.stops) stop();
  }

  private send(call: RemoteCall, node: string): void {
    // A call delivered again counts against its new node only.
    if (call.node) this.settled(call);
    call.node = node;
    this.sentTo.set(node, (this.sentTo.get(node) ?? 0) + 1);
    call.delivery += 1;
    call.via = this.toWorkerNode(node, this.callMessage(call));
  }

  private callMessage(call: RemoteCall): ToWorkerNode {
    return { kind: "call", from: this.options.nodeId, delivery: call.delivery, request: call.request };
  }

  /** To a worker's node: on a direct link when one is open (answered), else over the bus. */
  private toWorkerNode(node: string, message: ToWorkerNode): DirectLink | undefined {
    const data = JSON.stringify(message);
    const link = this.options.links?.send(node, HOSTED, data);
    if (!link) this.options.bus.publish(hostedSubject(node), data);
    return link;
  }

  /** About a call this node sent: the way the call went (its link while open), else the bus. */
  private alongCall(call: RemoteCall, message: ToWorkerNode): void {
    const data = JSON.stringify(message);
    if (call.via?.open) call.via.send(HOSTED, data);
    else this.options.bus.publish(hostedSubject(call.node), data);
  }

  /** To a call's owner: the way the delivery came (its link while open), else the bus. */
  private toOwner(owner: string, via: DirectLink | undefined, message: ToOwner): void {
    const data = JSON.stringify(message);
    if (via?.open) via.send(BACK, data);
    else this.options.bus.publish(backSubject(owner), data);
  }

  /**
   * A link closed: the calls sent on it that have no result yet go again over the bus, same
   * delivery (whatever of them arrived is joined on the worker's node; a result lost on the link
   * is the worker's stored one), a cancel under way with them.
   */
  private linkClosed(link: DirectLink): void {
    for (const call of this.remote.values()) {
      if (call.via !== link) continue;
      call.via = undefined;
      this.options.bus.publish(hostedSubject(call.node), JSON.stringify(this.callMessage(call)));
      if (call.cancelled)
        this.options.bus.publish(
          hostedSubject(call.node),
          JSON.stringify({ kind: "cancel", callId: call.request.callId, reason: call.cancelled }),
        );
    }
  }

  /** The live nodes whose workers host the tool: a lookup in the snapshot's index, built once per snapshot. */
  private nodesHosting(agent: string, tool: string): string[] {
    const tools = this.options.remoteTools();
    let index = this.hostingCache.get(tools);
    if (!index) {
      index = new Map();
      for (const [node, byAgent] of tools)
        for (const [id, specs] of Object.entries(byAgent))
          for (const spec of specs) {
            const key = `${id}\u0000${spec.name}`;
            const nodes = index.get(key);
            if (!nodes) index.set(key, [node]);
            else if (!nodes.includes(node)) nodes.push(node);
          }
      this.hostingCache.set(tools, index);
    }
    const hosting = index.get(`${agent}\u0000${tool}`);
    if (!hosting) return [];
    return hosting.filter((node) => this.options.isAlive(node));
  }

  /** A remote call no longer counts against the node it was sent to. */
  private settled(call: RemoteCall): void {
    const left = (this.sentTo.get(call.node) ?? 1) - 1;
    if (left > 0) this.sentTo.set(call.node, left);
    else this.sentTo.delete(call.node);
  }

  /**
   * How busy a node's least busy host of the tool is: the calls it said it had outstanding at
   * its last heartbeat, and this node's calls sent there since (counted whole: a slight bias to
   * spread calls).
   */
  private loadOf(node: string, agent: string, tool: string): number {
    return (this.options.remoteLoad?.(node, agent, tool) ?? 0) + (this.sentTo.get(node) ?? 0);
  }

  /** The live node hosting the tool whose least busy host has the most room. */
  private pickNode(agent: string, tool: string, not: string | undefined): string | undefined {
    let best: string | undefined;
    let bestLoad = Number.POSITIVE_INFINITY;
    for (const node of this.nodesHosting(agent, tool)) {
      if (node === not) continue;
      const load = this.loadOf(node, agent, tool);
      if (load < bestLoad) {
        best = node;
        bestLoad = load;
      }
    }
    return best;
  }

  /** The worker side: run a call for another node's session on this node's workers. */
  private fromOwner(data: string, via: DirectLink | undefined): void {
    const message = JSON.parse(data) as ToWorkerNode;
    if (message.kind === "cancel") {
      const serving = this.serving.get(message.callId);
      if (serving) serving.cancelling = true;
      this.options.local.cancel(message.callId, message.reason);
      return;
    }
    if (message.kind === "approval.answer") {
      this.serving.get(message.callId)?.approval?.resolve(message.answer);
      return;
    }
    const { request, from, delivery } = message;
    const callId = request.callId;
    // A delivery of a call still running here (its owner died and another node took the session
    // over): the local router joins the running call, and from now on this owner hears of it.
    const previous = this.serving.get(callId);
    const serving: Serving = { owner: from, delivery, cancelling: false, via, approval: previous?.approval };
    this.serving.set(callId, serving);
    const back = (answer: ToOwner) => this.toOwner(from, serving.via, answer);
    const askOwner = () => back({ kind: "approval", callId, delivery, node: this.options.nodeId });
    // The question the worker waits on was asked of the previous owner: this one decides now.
    if (serving.approval) askOwner();
    void this.options.local
      .call(request, {
        progress: (text) => back({ kind: "progress", callId, delivery, text }),
        say: (text) => back({ kind: "say", callId, delivery, text }),
        hold: (attempt?: number): HoldAnswer => {
          if (serving.cancelling) return { accepted: false, reason: "cancelling" };
          back({ kind: "hold", callId, delivery });
          return { accepted: attempt === undefined || attempt >= 1 };
        },
        approval: () => {
          if (!serving.approval) {
            let resolve!: (answer: ApprovalAnswer) => void;
            const answer = new Promise<ApprovalAnswer>((r) => {
              resolve = r;
            });
            serving.approval = { answer, resolve };
            askOwner();
          }
          return serving.approval.answer;
        },
        // Redeliveries among this node's workers stay this node's business.
        attempt: () => {},
      })
      .then((result) => {
        if (this.serving.get(callId) === serving) this.serving.delete(callId);
        back({ kind: "result", callId, delivery, result });
      });
  }

  /** The owner side: what a worker node says about a call it runs for this node. */
  private fromWorkerNode(data: string): void {
    const message = JSON.parse(data) as ToOwner;
    const call = this.remote.get(message.callId);
    if (message.kind === "approval") {
      // The runner asks the user (once per call) and the worker's node hears how it ended.
      const asked =
        call && call.delivery === message.delivery
          ? (call.handlers.approval?.() ?? Promise.resolve<ApprovalAnswer>({ outcome: "cancelled" }))
          : Promise.resolve<ApprovalAnswer>({
              outcome: "cancelled",
              reason: call ? "stale_attempt" : "settled",
            });
      void asked.then((answer) => {
        const reply: ToWorkerNode = { kind: "approval.answer", callId: message.callId, answer };
        if (call && call.node === message.node) this.alongCall(call, reply);
        else this.options.bus.publish(hostedSubject(message.node), JSON.stringify(reply));
      });
      return;
    }
    // An answer of an older delivery (its node was given up on) changes nothing.
    if (!call || call.delivery !== message.delivery) return;
    switch (message.kind) {
      case "progress":
        call.handlers.progress(message.text);
        return;
      case "say":
        call.handlers.say(message.text);
        return;
      case "hold":
        // The worker's attempt numbers are its node's own; the owner's runner counts deliveries.
        call.handlers.hold();
        return;
      case "result":
        this.remote.delete(message.callId);
        this.settled(call);
        call.resolve(message.result);
        return;
    }
  }

  /** Calls whose worker node went silent go to another node hosting the tool, same call id. */
  private redeliverFromSilent(): void {
    for (const call of this.remote.values()) {
      if (this.options.isAlive(call.node)) continue;
      const next = this.pickNode(call.request.agent, call.request.tool, call.node);
      if (next) {
        this.options.logger.warn("a hosted call's node went silent; delivering it again elsewhere", {
          callId: call.request.callId,
          from: call.node,
          to: next,
        });
        this.send(call, next);
        call.handlers.attempt(call.delivery);
        // A call being cancelled stays cancelled on the node it moved to.
        if (call.cancelled)
          this.alongCall(call, { kind: "cancel", callId: call.request.callId, reason: call.cancelled });
      } else if (this.options.local.hasTool(call.request.agent, call.request.tool)) {
        this.remote.delete(call.request.callId);
        this.settled(call);
        void this.options.local.call(call.request, call.handlers).then(call.resolve);
        if (call.cancelled) this.options.local.cancel(call.request.callId, call.cancelled);
      }
      // Else nobody hosts the tool now: the runner's timeout ends the call.
    }
  }
}
