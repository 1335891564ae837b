import type { SessionInfo } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import type { MessageRouteOutcome, MessageRouteRequest, MessageRouter } from "../extensions/dispatch-seams";
import { silentLogger } from "../observability/logger";
import { ClusterMessageRouter } from "./cluster-message-router";
import { MemoryBusHub } from "./memory-bus";

// Worker-first messages across nodes, on the in-process bus; each node's own router records the
// messages it got and answers when the test says (the real one runs in cluster-failover.test.ts).
class NodeWorkers implements MessageRouter {
  readonly routed: { request: MessageRouteRequest; settle: (o: MessageRouteOutcome) => void }[] = [];
  route(request: MessageRouteRequest): Promise<MessageRouteOutcome> {
    return new Promise((settle) => this.routed.push({ request, settle }));
  }
}

const session: SessionInfo = {
  id: "s_1",
  agent: "desk",
  userId: "u_1",
  metadata: {},
  createdAt: 0,
  lastSeq: 0,
};
const request = (signal = new AbortController().signal): MessageRouteRequest => ({
  session,
  message: {
    id: "m_1",
    agent: "desk",
    sessionId: "s_1",
    channel: null,
    user: { id: "u_1" },
    text: "hello",
    createdAt: 0,
    metadata: {},
  } as MessageRouteRequest["message"],
  images: [],
  signal,
});

function cluster(rooms: Record<string, number>) {
  const hub = new MemoryBusHub();
  const alive = new Set(Object.keys(rooms));
  const workers = new Map<string, NodeWorkers>();
  const routers = new Map<string, ClusterMessageRouter>();
  for (const node of alive) workers.set(node, new NodeWorkers());
  for (const node of alive) {
    routers.set(
      node,
      new ClusterMessageRouter({
        local: workers.get(node)!,
        bus: hub.connect(),
        nodeId: node,
        localRoom: () => rooms[node]!,
        remoteRoom: () => new Map(Object.entries(rooms).filter(([id]) => id !== node && alive.has(id))),
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

describe("ClusterMessageRouter", () => {
  it("routes a message to the node whose freest worker has the most free slots, and brings back how it ended", async () => {
    const c = cluster({ n_a: -1, n_b: 1, n_c: 3 });
    try {
      const outcome = c.router("n_a").route(request());
      await until(() => c.workers.get("n_c")!.routed.length === 1);
      expect(c.workers.get("n_c")!.routed[0]!.request.message).toMatchObject({ id: "m_1", sessionId: "s_1" });
      c.workers.get("n_c")!.routed[0]!.settle({ kind: "answer" });
      expect(await outcome).toEqual({ kind: "answer" });
      // A tie stays on the node itself.
      void c.router("n_c").route(request());
      expect(c.workers.get("n_c")!.routed).toHaveLength(2);
    } finally {
      c.close();
    }
  });

  it("withdraws a routed message on the worker's node when the turn is interrupted", async () => {
    const c = cluster({ n_a: 0, n_b: 2 });
    try {
      const interrupt = new AbortController();
      void c.router("n_a").route(request(interrupt.signal));
      await until(() => c.workers.get("n_b")!.routed.length === 1);
      const there = c.workers.get("n_b")!.routed[0]!.request.signal;
      expect(there.aborted).toBe(false);
      interrupt.abort();
      await until(() => there.aborted);
    } finally {
      c.close();
    }
  });

  it("drops a message with no_worker when its node goes silent before it says how the message ended", async () => {
    const c = cluster({ n_a: 0, n_b: 2 });
    try {
      const outcome = c.router("n_a").route(request());
      await until(() => c.workers.get("n_b")!.routed.length === 1);
      c.alive.delete("n_b");
      expect(await outcome).toMatchObject({ kind: "dropped", error: { code: "no_worker" } });
    } finally {
      c.close();
    }
  });
});
