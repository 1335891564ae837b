import type { ToolResult, ToolSpec } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import type { HostedToolRequest, HostedToolRouter, ToolCallHandlers } from "../extensions/dispatch-seams";
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
    return new Promise((answer) => this.calls.push({ request, handlers, answer }));
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

function cluster(hosting: string[]) {
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

const handlersLog = () => {
  const log: string[] = [];
  const handlers: ToolCallHandlers = {
    progress: (text) => log.push(`progress ${text}`),
    say: (text) => log.push(`say ${text}`),
    hold: () => {
      log.push("hold");
      return { accepted: true };
    },
    attempt: (n) => log.push(`attempt ${n}`),
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
});
