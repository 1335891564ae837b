import type { ToolSpec } from "@patchbay/protocol";
import { describe, expect, it } from "vitest";
import { silentLogger } from "../observability/logger";
import { MemoryStore } from "../store/memory-store";
import type { SessionLeases } from "../store/store";
import { ClusterNode, NODES_SUBJECT } from "./cluster-node";
import { MemoryBusHub } from "./memory-bus";

const flush = () => new Promise((r) => setTimeout(r, 0));

describe("ClusterNode", () => {
  it("hears the other nodes' heartbeats and forgets a node silent for three intervals", async () => {
    const hub = new MemoryBusHub();
    const store = new MemoryStore();
    const a = new ClusterNode({
      bus: hub.connect(),
      leases: store.leases,
      logger: silentLogger,
      nodeId: "n_a",
      heartbeatIntervalMs: 60_000,
    });
    const b = new ClusterNode({
      bus: hub.connect(),
      leases: store.leases,
      logger: silentLogger,
      nodeId: "n_b",
      heartbeatIntervalMs: 60_000,
    });
    b.sessionsOwned = () => 4;
    try {
      await a.beat();
      await b.beat();
      await flush();
      expect(a.nodes()).toEqual([expect.objectContaining({ nodeId: "n_b", sessions: 4 })]);
      expect(b.readiness()).toEqual({ node: "n_b", bus: "connected", database: "up", peers: ["n_a"] });
      // Something else on the subject is ignored.
      hub.connect().publish(NODES_SUBJECT, "not json");
      await flush();
      expect(a.nodes().map((n) => n.nodeId)).toEqual(["n_b"]);
    } finally {
      await a.close();
      await b.close();
    }
    const c = new ClusterNode({
      bus: hub.connect(),
      leases: store.leases,
      logger: silentLogger,
      nodeId: "n_c",
      heartbeatIntervalMs: 20,
    });
    const d = new ClusterNode({
      bus: hub.connect(),
      leases: store.leases,
      logger: silentLogger,
      nodeId: "n_d",
      heartbeatIntervalMs: 20,
    });
    try {
      await new Promise((r) => setTimeout(r, 50));
      expect(c.nodes().map((n) => n.nodeId)).toEqual(["n_d"]);
      await d.close();
      await new Promise((r) => setTimeout(r, 100));
      expect(c.nodes()).toEqual([]);
    } finally {
      await c.close();
    }
  });

  it("keeps one map of the other nodes' hosted tools until a heartbeat changes them or a node goes silent", async () => {
    const hub = new MemoryBusHub();
    const store = new MemoryStore();
    const node = (nodeId: string, heartbeatIntervalMs: number) =>
      new ClusterNode({
        bus: hub.connect(),
        leases: store.leases,
        logger: silentLogger,
        nodeId,
        heartbeatIntervalMs,
      });
    const a = node("n_a", 60_000);
    const b = node("n_b", 60_000);
    const spec: ToolSpec = { name: "lookup_order", description: "Look up", parameters: { type: "object" } };
    let tools = [spec];
    b.hostedTools = () => ({ support: tools });
    try {
      await b.beat();
      await flush();
      const first = a.remoteHosted();
      expect([...first]).toEqual([["n_b", { support: [spec] }]]);
      // The same tools again: the same map (a router may index it by identity).
      await b.beat();
      await flush();
      expect(a.remoteHosted()).toBe(first);
      tools = [spec, { ...spec, name: "refund" }];
      await b.beat();
      await flush();
      expect(a.remoteHosted()).not.toBe(first);
      expect(
        a
          .remoteHosted()
          .get("n_b")!
          .support!.map((t) => t.name),
      ).toEqual(["lookup_order", "refund"]);
    } finally {
      await a.close();
      await b.close();
    }
    // A node silent for three intervals leaves the map.
    const c = node("n_c", 200);
    const d = node("n_d", 200);
    d.hostedTools = () => ({ support: [spec] });
    const until = async (check: () => boolean) => {
      for (let i = 0; i < 200 && !check(); i++) await new Promise((r) => setTimeout(r, 25));
      expect(check()).toBe(true);
    };
    try {
      await until(() => c.remoteHosted().has("n_d"));
      await d.close();
      await until(() => c.remoteHosted().size === 0);
    } finally {
      await c.close();
    }
  });

  it("is not ready while its bus is down or its database does not answer, and ready again after", async () => {
    const hub = new MemoryBusHub();
    const bus = hub.connect();
    const store = new MemoryStore();
    let databaseDown = false;
    const leases: SessionLeases = {
      ...store.leases,
      acquire: store.leases.acquire.bind(store.leases),
      renew: store.leases.renew.bind(store.leases),
      release: store.leases.release.bind(store.leases),
      expired: store.leases.expired.bind(store.leases),
      get: async (id) => {
        if (databaseDown) throw new Error("connection refused");
        return store.leases.get(id);
      },
    };
    const node = new ClusterNode({ bus, leases, logger: silentLogger, heartbeatIntervalMs: 60_000 });
    try {
      expect(node.nodeId).toMatch(/^n_/);
      await node.beat();
      expect(node.ready).toBe(true);
      bus.disconnect();
      expect(node.ready).toBe(false);
      expect(node.readiness()).toMatchObject({ bus: "disconnected", database: "up" });
      bus.reconnect();
      databaseDown = true;
      await node.beat();
      expect(node.ready).toBe(false);
      expect(node.readiness()).toMatchObject({ bus: "connected", database: "down" });
      databaseDown = false;
      await node.beat();
      expect(node.ready).toBe(true);
    } finally {
      await node.close();
    }
  });
});
