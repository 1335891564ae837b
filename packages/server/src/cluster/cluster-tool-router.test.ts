import type { ToolResult, ToolSpec } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import type {
  ApprovalAnswer,
  HostedToolRequest,
  HostedToolRouter,
  ToolCallHandlers,
} from "../extensions/dispatch-seams";
import { silentLogger } from "../observability/logger";
import { ClusterToolRouter } from "./cluster-tool-router";
import { type DirectAddress, DirectLinks } from "./direct-links";
import { MemoryBusHub } from "./memory-bus";

// The routing across nodes, on the in-process bus; each node's own router is a small one that
// records the calls it got and answers when the test says (the real one, with worker sockets,
// runs in packages/e2e/test/cluster-failover.test.ts). Every test runs twice: over the bus alone,
// and with direct links between the nodes on real loopback sockets, opened before the test (the
// file is over 400 lines for that: both transports share these fakes).
const SPEC: ToolSpec = { name: "record_payment", description: "Pay", parameters: { type: "object" } };

class NodeWorkers implements HostedToolRouter {
  readonly calls: {
    request: HostedToolRequest;
    handlers: ToolCallHandlers;
    answer: (r: ToolResult) => void;
    joined: number;
    done: boolean;
  }[] = [];
  readonly cancels: string[] = [];
  /** Called on every call that arrives, joined or new. */
  onCall: (() => void) | undefined;
  constructor(private readonly hosts: boolean) {}
  hasTool(_agent: string, name: string) {
    return this.hosts && name === SPEC.name;
  }
  specs() {
    return this.hosts ? [SPEC] : [];
  }
  call(request: HostedToolRequest, handlers: ToolCallHandlers): Promise<ToolResult> {
    // As WorkerToolRouter: a call asked again while it runs is joined, its handlers the newest.
    const running = this.calls.find((x) => x.request.callId === request.callId && !x.done);
    queueMicrotask(() => this.onCall?.());
    if (running) {
      running.handlers = handlers;
      running.joined += 1;
      return new Promise((answer) => {
        const first = running.answer;
        running.answer = (r) => {
          first(r);
          answer(r);
        };
      });
    }
    return new Promise((answer) => {
      const entry = {
        request,
        handlers,
        joined: 0,
        done: false,
        answer: (r: ToolResult) => {
          entry.done = true;
          answer(r);
        },
      };
      this.calls.push(entry);
    });
  }
  cancel(callId: string) {
    this.cancels.push(callId);
  }
}

const request = (callId: string): HostedToolRequest => ({
  callId,
  agent: "support",
  sessionId: "s_1",
  tool: SPEC.name,
  arguments: { amount: 5 },
  user: { id: "u_1" },
  conversation: [],
  timeoutMs: 30_000,
});
const ok = (text: string): ToolResult => ({ outcome: "completed", content: { text, images: [] } });

async function cluster(hosting: string[], loads: Record<string, number> = {}, direct = false) {
  const hub = new MemoryBusHub();
  const alive = new Set(["n_a", "n_b", "n_c"]);
  const workers = new Map<string, NodeWorkers>();
  const routers = new Map<string, ClusterToolRouter>();
  /** The hosted calls' subjects published on the bus (what did not go on a link). */
  const onBus: string[] = [];
  const addresses = new Map<string, DirectAddress>();
  const links = new Map<string, DirectLinks>();
  if (direct)
    for (const node of alive) {
      const own = await DirectLinks.listen({
        nodeId: node,
        host: "127.0.0.1",
        port: 0,
        advertiseHost: "127.0.0.1",
        addressOf: (id) => (alive.has(id) ? addresses.get(id) : undefined),
        logger: silentLogger,
      });
      addresses.set(node, own.address);
      links.set(node, own);
    }
  for (const node of alive) workers.set(node, new NodeWorkers(hosting.includes(node)));
  for (const node of alive) {
    const bus = hub.connect();
    const publish = bus.publish.bind(bus);
    bus.publish = (subject, data) => {
      if (subject.includes(".hosted")) onBus.push(subject);
      publish(subject, data);
    };
    const own = links.get(node);
    routers.set(
      node,
      new ClusterToolRouter({
        local: workers.get(node)!,
        bus,
        ...(own ? { links: own } : {}),
        nodeId: node,
        remoteTools: () =>
          new Map(
            [...workers]
              .filter(([id]) => id !== node && alive.has(id))
              .map(([id, w]) => [id, { support: w.specs() }]),
          ),
        isAlive: (id) => alive.has(id),
        localLoad: () => loads[node] ?? 0,
        remoteLoad: (id) => loads[id],
        logger: silentLogger,
        checkIntervalMs: 20,
      }),
    );
  }
  // One link per pair, open before the test begins.
  if (direct) {
    const opened = await Promise.all([
      links.get("n_a")!.connect("n_b"),
      links.get("n_a")!.connect("n_c"),
      links.get("n_b")!.connect("n_c"),
    ]);
    expect(opened.every((link) => link !== undefined)).toBe(true);
  }
  return {
    alive,
    workers,
    onBus,
    links: (node: string) => links.get(node)!,
    router: (node: string) => routers.get(node)!,
    close: async () => {
      for (const router of routers.values()) router.close();
      await Promise.all([...links.values()].map((own) => own.close()));
    },
  };
}

/** Resolves once `check` holds, looked at on each call that reaches the node's workers. */
const whenCalled = (workers: NodeWorkers, check: () => boolean) =>
  new Promise<void>((resolve) => {
    const look = () => {
      if (!check()) return;
      workers.onCall = undefined;
      resolve();
    };
    workers.onCall = look;
    look();
  });

const until = async (check: () => boolean) => {
  for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(check()).toBe(true);
};

const handlersLog = (approval?: ApprovalAnswer) => {
  const log: string[] = [];
  const handlers: ToolCallHandlers = {
    progress: (text) => log.push(`progress ${text}`),
    say: (text) => log.push(`say ${text}`),
    hold: () => {
      log.push("hold");
      return { accepted: true };
    },
    attempt: (n) => log.push(`attempt ${n}`),
    ...(approval
      ? {
          approval: async () => {
            log.push("approval");
            return approval;
          },
        }
      : {}),
  };
  return { log, handlers };
};

describe.each(["the bus", "direct links"])("ClusterToolRouter over %s", (transport) => {
  const make = (hosting: string[], loads?: Record<string, number>) =>
    cluster(hosting, loads, transport === "direct links");

  it("runs a call on its own workers when they host the tool, else on a node whose workers do, relaying progress and the result", async () => {
    const c = await make(["n_a", "n_c"]);
    try {
      expect(c.router("n_b").hasTool("support", SPEC.name)).toBe(true);
      expect(c.router("n_b").specs("support")).toEqual([SPEC]);
      void c.router("n_a").call(request("call_local"), handlersLog().handlers);
      expect(c.workers.get("n_a")!.calls.map((x) => x.request.callId)).toEqual(["call_local"]);
      const { log, handlers } = handlersLog();
      const result = c.router("n_b").call(request("call_1"), handlers);
      await until(() => c.workers.get("n_a")!.calls.length + c.workers.get("n_c")!.calls.length === 2);
      const remote = [...c.workers.get("n_a")!.calls, ...c.workers.get("n_c")!.calls].find(
        (x) => x.request.callId === "call_1",
      )!;
      remote.handlers.progress("Recording");
      expect(remote.handlers.hold()).toEqual({ accepted: true });
      remote.answer(ok("paid"));
      expect(await result).toEqual(ok("paid"));
      expect(log).toEqual(["progress Recording", "hold"]);
    } finally {
      await c.close();
    }
  });

  it("delivers a call again, same id, to another node when the node running it goes silent, and drops the silent node's late answer", async () => {
    const c = await make(["n_a", "n_c"]);
    try {
      const { log, handlers } = handlersLog();
      const result = c.router("n_b").call(request("call_2"), handlers);
      await until(() => c.workers.get("n_a")!.calls.length + c.workers.get("n_c")!.calls.length === 1);
      const first = c.workers.get("n_a")!.calls.length === 1 ? "n_a" : "n_c";
      const second = first === "n_a" ? "n_c" : "n_a";
      c.alive.delete(first);
      await until(() => c.workers.get(second)!.calls.length === 1);
      expect(c.workers.get(second)!.calls[0]!.request.callId).toBe("call_2");
      expect(log).toEqual(["attempt 2"]);
      // The first node comes back with its answer: too late, it changes nothing.
      c.alive.add(first);
      c.workers.get(first)!.calls[0]!.answer(ok("from the silent node"));
      await new Promise((r) => setTimeout(r, 20));
      c.workers.get(second)!.calls[0]!.answer(ok("from the second node"));
      expect(await result).toEqual(ok("from the second node"));
    } finally {
      await c.close();
    }
  });

  it("passes a cancel to the node running the call, which then refuses holds", async () => {
    const c = await make(["n_c"]);
    try {
      const result = c.router("n_a").call(request("call_3"), handlersLog().handlers);
      await until(() => c.workers.get("n_c")!.calls.length === 1);
      c.router("n_a").cancel("call_3", "interrupted");
      await until(() => c.workers.get("n_c")!.cancels.length === 1);
      const remote = c.workers.get("n_c")!.calls[0]!;
      expect(remote.handlers.hold()).toEqual({ accepted: false, reason: "cancelling" });
      const cancelled: ToolResult = { outcome: "cancelled", content: { text: "stopped", images: [] } };
      remote.answer(cancelled);
      expect(await result).toEqual(cancelled);
    } finally {
      await c.close();
    }
  });

  it("brings a conditional approval the worker's node asks for to the session's owner, and its answer back", async () => {
    const c = await make(["n_c"]);
    try {
      const { log, handlers } = handlersLog({ outcome: "declined", reason: "too much" });
      const result = c.router("n_a").call(request("call_4"), handlers);
      await until(() => c.workers.get("n_c")!.calls.length === 1);
      const remote = c.workers.get("n_c")!.calls[0]!;
      // Asked twice (a redelivery among the node's workers): one question, one answer.
      const [first, again] = await Promise.all([remote.handlers.approval!(1), remote.handlers.approval!(2)]);
      expect(first).toEqual({ outcome: "declined", reason: "too much" });
      expect(again).toEqual(first);
      expect(log).toEqual(["approval"]);
      remote.answer(ok("not run"));
      expect(await result).toEqual(ok("not run"));
    } finally {
      await c.close();
    }
  });

  it("joins a call still running on the worker's node when the node taking over a dead owner's session sends it again, and answers the new owner, its open question included", async () => {
    const c = await make(["n_c"]);
    try {
      const old = handlersLog({ outcome: "allowed" });
      void c.router("n_a").call(request("call_5"), old.handlers);
      await until(() => c.workers.get("n_c")!.calls.length === 1);
      const remote = c.workers.get("n_c")!.calls[0]!;
      // The worker asks a question; the owner dies before it answers (its router is gone).
      c.router("n_a").close();
      c.alive.delete("n_a");
      const question = remote.handlers.approval!(1);
      await new Promise((r) => setTimeout(r, 20));
      // n_b took the session over and sends the call again, as attempt 2 (the one after n_a's).
      const next = handlersLog({ outcome: "allowed" });
      const result = c.router("n_b").call({ ...request("call_5"), attempt: 2 }, next.handlers);
      await until(() => remote.joined === 1);
      expect(c.workers.get("n_c")!.calls).toHaveLength(1);
      // The question waiting on n_a is asked of n_b, and answered from there.
      expect(await question).toEqual({ outcome: "allowed" });
      expect(next.log).toEqual(["approval"]);
      remote.handlers.progress("Recording");
      remote.answer(ok("paid once"));
      expect(await result).toEqual(ok("paid once"));
      expect(next.log).toEqual(["approval", "progress Recording"]);
      expect(old.log).toEqual([]);
    } finally {
      await c.close();
    }
  });

  it("numbers a resumed call's deliveries on from the attempt it names", async () => {
    const c = await make(["n_b", "n_c"]);
    try {
      const { log, handlers } = handlersLog();
      void c.router("n_a").call({ ...request("call_6"), attempt: 3 }, handlers);
      await until(() => c.workers.get("n_b")!.calls.length + c.workers.get("n_c")!.calls.length === 1);
      const first = c.workers.get("n_b")!.calls.length === 1 ? "n_b" : "n_c";
      c.alive.delete(first);
      await until(() => log.length === 1);
      expect(log).toEqual(["attempt 4"]);
    } finally {
      await c.close();
    }
  });

  it("sends a call to the node whose least busy host has the most room, its own workers on a tie", async () => {
    const loads: Record<string, number> = { n_a: 2, n_b: 1, n_c: 0 };
    const c = await make(["n_a", "n_b", "n_c"], loads);
    try {
      void c.router("n_a").call(request("call_7"), handlersLog().handlers);
      await until(() => c.workers.get("n_c")!.calls.length === 1);
      // n_b (1) and n_c (0, plus the call just sent there) are as busy as n_a: a tie stays here.
      loads.n_a = 1;
      void c.router("n_a").call(request("call_8"), handlersLog().handlers);
      expect(c.workers.get("n_a")!.calls.map((x) => x.request.callId)).toEqual(["call_8"]);
      loads.n_a = 3;
      void c.router("n_a").call(request("call_9"), handlersLog().handlers);
      await until(() => c.workers.get("n_b")!.calls.length === 1);
      expect(c.workers.get("n_b")!.calls[0]!.request.callId).toBe("call_9");
    } finally {
      await c.close();
    }
  });

  it("counts a call against the node it went to only until its result came back", async () => {
    const loads: Record<string, number> = { n_a: 1, n_c: 0 };
    const c = await make(["n_a", "n_c"], loads);
    try {
      const first = c.router("n_a").call(request("call_10"), handlersLog().handlers);
      await until(() => c.workers.get("n_c")!.calls.length === 1);
      // While it runs, n_c (0 + 1 sent) ties with n_a (1): the next call stays here.
      void c.router("n_a").call(request("call_11"), handlersLog().handlers);
      expect(c.workers.get("n_a")!.calls.map((x) => x.request.callId)).toEqual(["call_11"]);
      c.workers.get("n_c")!.calls[0]!.answer(ok("done"));
      expect(await first).toEqual(ok("done"));
      // Answered: n_c has room again.
      void c.router("n_a").call(request("call_12"), handlersLog().handlers);
      await until(() => c.workers.get("n_c")!.calls.length === 2);
      expect(c.workers.get("n_c")!.calls[1]!.request.callId).toBe("call_12");
    } finally {
      await c.close();
    }
  });
});

describe("ClusterToolRouter with direct links", () => {
  it("sends a call and everything about it on the link, nothing on the bus", async () => {
    const c = await cluster(["n_c"], {}, true);
    try {
      const { log, handlers } = handlersLog();
      const result = c.router("n_a").call(request("call_d1"), handlers);
      await whenCalled(c.workers.get("n_c")!, () => c.workers.get("n_c")!.calls.length === 1);
      const remote = c.workers.get("n_c")!.calls[0]!;
      remote.handlers.progress("Recording");
      expect(remote.handlers.hold()).toEqual({ accepted: true });
      remote.answer(ok("paid"));
      expect(await result).toEqual(ok("paid"));
      expect(log).toEqual(["progress Recording", "hold"]);
      expect(c.onBus).toEqual([]);
    } finally {
      await c.close();
    }
  });

  it("sends a call again over the bus, same delivery, when its link closes before the result: the worker's node joins it and the owner gets one result", async () => {
    const c = await cluster(["n_c"], {}, true);
    try {
      const log: string[] = [];
      let progressed!: () => void;
      const progress = new Promise<void>((resolve) => {
        progressed = resolve;
      });
      const handlers: ToolCallHandlers = {
        ...handlersLog().handlers,
        progress: (text) => {
          log.push(`progress ${text}`);
          progressed();
        },
        attempt: (n) => log.push(`attempt ${n}`),
      };
      const result = c.router("n_a").call(request("call_d2"), handlers);
      const workers = c.workers.get("n_c")!;
      await whenCalled(workers, () => workers.calls.length === 1);
      expect(c.onBus).toEqual([]);
      const closed = new Promise<void>((resolve) => c.links("n_a").onClose(() => resolve()));
      c.links("n_a").drop("n_c");
      await closed;
      // The call went again over the bus and was joined where it runs: the tool runs once.
      await whenCalled(workers, () => workers.calls[0]!.joined === 1);
      expect(c.onBus).toEqual(["patchbay.node.n_c.hosted"]);
      expect(workers.calls).toHaveLength(1);
      workers.calls[0]!.handlers.progress("still running");
      await progress;
      workers.calls[0]!.answer(ok("paid once"));
      expect(await result).toEqual(ok("paid once"));
      // Same delivery: the runner saw no new attempt.
      expect(log).toEqual(["progress still running"]);
    } finally {
      await c.close();
    }
  });

  it("sends nothing again when a link closes after its calls' results came", async () => {
    const c = await cluster(["n_c"], {}, true);
    try {
      const result = c.router("n_a").call(request("call_d3"), handlersLog().handlers);
      const workers = c.workers.get("n_c")!;
      await whenCalled(workers, () => workers.calls.length === 1);
      workers.calls[0]!.answer(ok("done"));
      expect(await result).toEqual(ok("done"));
      const closed = [c.links("n_a"), c.links("n_c")].map(
        (own) => new Promise<void>((resolve) => own.onClose(() => resolve())),
      );
      c.links("n_a").drop("n_c");
      await Promise.all(closed);
      expect(c.onBus).toEqual([]);
      expect(workers.calls).toHaveLength(1);
    } finally {
      await c.close();
    }
  });
});
