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
import { MemoryBusHub } from "./memory-bus";

// The routing across nodes, on the in-process bus; each node's own router is a small one that
// records the calls it got and answers when the test says (the real one, with worker sockets,
// runs in packages/e2e/test/cluster-failover.test.ts).
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

function cluster(hosting: string[], loads: Record<string, number> = {}) {
  const hub = new MemoryBusHub();
  const alive = new Set(["n_a", "n_b", "n_c"]);
  const workers = new Map<string, NodeWorkers>();
  const routers = new Map<string, ClusterToolRouter>();
  for (const node of alive) workers.set(node, new NodeWorkers(hosting.includes(node)));
  for (const node of alive) {
    routers.set(
      node,
      new ClusterToolRouter({
        local: workers.get(node)!,
        bus: hub.connect(),
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
  return {
    alive,
    workers,
    router: (node: string) => routers.get(node)!,
    close: () => {
      for (const router of routers.values()) router.close();
    },
  };
}

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

describe("ClusterToolRouter", () => {
  it("runs a call on its own workers when they host the tool, else on a node whose workers do, relaying progress and the result", async () => {
    const c = cluster(["n_a", "n_c"]);
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
      c.close();
    }
  });

  it("delivers a call again, same id, to another node when the node running it goes silent, and drops the silent node's late answer", async () => {
    const c = cluster(["n_a", "n_c"]);
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
      c.close();
    }
  });

  it("passes a cancel to the node running the call, which then refuses holds", async () => {
    const c = cluster(["n_c"]);
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
      c.close();
    }
  });

  it("brings a conditional approval the worker's node asks for to the session's owner, and its answer back", async () => {
    const c = cluster(["n_c"]);
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
      c.close();
    }
  });

  it("joins a call still running on the worker's node when the node taking over a dead owner's session sends it again, and answers the new owner, its open question included", async () => {
    const c = cluster(["n_c"]);
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
      c.close();
    }
  });

  it("numbers a resumed call's deliveries on from the attempt it names", async () => {
    const c = cluster(["n_b", "n_c"]);
    try {
      const { log, handlers } = handlersLog();
      void c.router("n_a").call({ ...request("call_6"), attempt: 3 }, handlers);
      await until(() => c.workers.get("n_b")!.calls.length + c.workers.get("n_c")!.calls.length === 1);
      const first = c.workers.get("n_b")!.calls.length === 1 ? "n_b" : "n_c";
      c.alive.delete(first);
      await until(() => log.length === 1);
      expect(log).toEqual(["attempt 4"]);
    } finally {
      c.close();
    }
  });

  it("sends a call to the node whose least busy host has the most room, its own workers on a tie", async () => {
    const loads: Record<string, number> = { n_a: 2, n_b: 1, n_c: 0 };
    const c = cluster(["n_a", "n_b", "n_c"], loads);
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
      c.close();
    }
  });

  it("counts a call against the node it went to only until its result came back", async () => {
    const loads: Record<string, number> = { n_a: 1, n_c: 0 };
    const c = cluster(["n_a", "n_c"], loads);
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
      c.close();
    }
  });
});
