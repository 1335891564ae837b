import { describe, expect, it } from "vitest";
import type { DispatchWork, DispatchWorkReceipt } from "../extensions/dispatch-seams";
import { silentLogger } from "../observability/logger";
import { pingSubject } from "./cluster-node";
import { ClusterWork } from "./cluster-work";
import { MemoryBusHub } from "./memory-bus";

// Inbound work across nodes, on the in-process bus: the node with the most free slots of the
// work's kind gets it and its receipt comes back (the real routes run in cluster-failover.test.ts).
const call: DispatchWork = {
  kind: "call",
  call: { id: "pc_1", agent: "support", from: "+1", to: "+2", customData: {}, createdAt: 0 },
};

function nodes(rooms: Record<string, { messages: number; calls: number }>, answerTimeoutMs = 200) {
  const hub = new MemoryBusHub();
  const alive = new Set(Object.keys(rooms));
  const got = new Map<string, DispatchWork[]>();
  const work = new Map<string, ClusterWork>();
  for (const node of alive) {
    const cluster = new ClusterWork({
      bus: hub.connect(),
      nodeId: node,
      remoteRoom: () => new Map(Object.entries(rooms).filter(([id]) => id !== node)),
      isAlive: (id) => alive.has(id),
      logger: silentLogger,
      answerTimeoutMs,
      probeIntervalMs: 50,
    });
    got.set(node, []);
    cluster.serve((payload): DispatchWorkReceipt => {
      got.get(node)!.push(payload);
      return { status: "queued", workId: `wk_${node}` };
    });
    work.set(node, cluster);
  }
  const local = (node: string) => (): DispatchWorkReceipt => {
    got.get(node)!.push(call);
    return { status: "offered", workId: `wk_local_${node}` };
  };
  const close = () => {
    for (const cluster of work.values()) cluster.close();
  };
  return { hub, alive, got, work, local, close };
}

/** n_a, and n_b with more room, played by the test: its own serving closed, a bus to answer on. */
function playedNode() {
  const c = nodes({ n_a: { messages: 0, calls: 0 }, n_b: { messages: 0, calls: 2 } }, 5_000);
  c.work.get("n_b")!.close();
  return { c, bus: c.hub.connect() };
}

describe("ClusterWork", () => {
  it("hands work to the node with the most free slots of its kind and answers with that node's receipt", async () => {
    const c = nodes({
      n_a: { messages: 5, calls: -1 },
      n_b: { messages: 0, calls: 1 },
      n_c: { messages: 0, calls: 3 },
    });
    try {
      expect(await c.work.get("n_a")!.submit(call, c.local("n_a"), -1)).toEqual({
        status: "queued",
        workId: "wk_n_c",
      });
      expect(c.got.get("n_c")).toEqual([call]);
      // As much room here as anywhere: it stays here.
      expect(await c.work.get("n_c")!.submit(call, c.local("n_c"), 3)).toEqual({
        status: "offered",
        workId: "wk_local_n_c",
      });
    } finally {
      c.close();
    }
  });

  it("keeps the work here when the node it chose does not answer", async () => {
    const c = nodes({ n_a: { messages: 0, calls: 0 }, n_b: { messages: 0, calls: 2 } });
    try {
      c.work.get("n_b")!.close();
      expect(await c.work.get("n_a")!.submit(call, c.local("n_a"), 0)).toEqual({
        status: "offered",
        workId: "wk_local_n_a",
      });
    } finally {
      c.close();
    }
  });

  it("keeps the work here as soon as the node it chose leaves the bus without answering (a crash NATS had not noticed yet)", async () => {
    const { c, bus } = playedNode();
    try {
      const stops = [
        bus.subscribe(pingSubject("n_b"), (message) => message.reply("")),
        // The request is delivered, but the process dies before it answers.
        bus.subscribe("patchbay.node.n_b.work", () => {
          setTimeout(() => {
            for (const stop of stops) stop();
          }, 120);
        }),
      ];
      const asked = Date.now();
      const receipt = await c.work.get("n_a")!.submit(call, c.local("n_a"), 0);
      const waited = Date.now() - asked;
      expect(receipt).toEqual({ status: "offered", workId: "wk_local_n_a" });
      expect(c.got.get("n_a")).toEqual([call]);
      expect(waited).toBeGreaterThanOrEqual(120);
      expect(waited).toBeLessThan(2_500);
    } finally {
      c.close();
    }
  });

  it("waits for a node that is alive but slow, and takes its receipt", async () => {
    const { c, bus } = playedNode();
    try {
      let pings = 0;
      bus.subscribe(pingSubject("n_b"), (message) => {
        pings += 1;
        message.reply("");
      });
      bus.subscribe("patchbay.node.n_b.work", (message) => {
        setTimeout(() => message.reply(JSON.stringify({ status: "queued", workId: "wk_slow" })), 300);
      });
      expect(await c.work.get("n_a")!.submit(call, c.local("n_a"), 0)).toEqual({
        status: "queued",
        workId: "wk_slow",
      });
      expect(c.got.get("n_a")).toEqual([]);
      expect(pings).toBeGreaterThanOrEqual(2);
      const after = pings;
      await new Promise((r) => setTimeout(r, 150));
      expect(pings).toBe(after);
    } finally {
      c.close();
    }
  });
});
