import { describe, expect, it } from "vitest";
import { silentLogger } from "../observability/logger";
import { MemoryStore } from "../store/memory-store";
import { session } from "../testing/store-contract";
import { SessionOwnership } from "./session-ownership";

function ownership(store: MemoryStore, nodeId: string, lost: string[], leaseTtlMs = 60_000) {
  return new SessionOwnership({
    leases: store.leases,
    nodeId,
    leaseTtlMs,
    logger: silentLogger,
    onLost: (sessionId) => lost.push(sessionId),
  });
}

describe("SessionOwnership", () => {
  it("claims a session once per node, refusing another node's live lease with `unavailable` naming the owner", async () => {
    const store = new MemoryStore();
    await store.createSession(session("s_1"));
    const a = ownership(store, "n_a", []);
    const b = ownership(store, "n_b", []);
    try {
      expect(await a.claim("s_1")).toEqual({ token: 1, fresh: true });
      expect(a.size).toBe(1);
      await expect(b.claim("s_1")).rejects.toMatchObject({
        code: "unavailable",
        message: expect.stringMatching(/session s_1 is served by node n_a/),
      });
      // Released on unload: the other node may take it at once, with a higher token.
      await a.release("s_1");
      expect(await b.claim("s_1")).toEqual({ token: 2, fresh: true });
    } finally {
      await a.close();
      await b.close();
    }
  });

  it("writes through the fenced store with the lease's token and reports the session lost once when a write is refused", async () => {
    let now = 1_000;
    const store = new MemoryStore({ now: () => now });
    await store.createSession(session("s_1"));
    const lost: string[] = [];
    const a = ownership(store, "n_a", lost, 1_000);
    try {
      const claim = await a.claim("s_1");
      const fenced = a.fenced(store, "s_1", claim.token);
      await fenced.commit("s_1", { events: [{ type: "tool.held", callId: "c_1" }] });
      now += 5_000; // n_a froze past its TTL; n_b takes the session.
      expect(await store.leases.acquire("s_1", "n_b", 1_000)).toMatchObject({ acquired: true, token: 2 });
      for (let i = 0; i < 2; i++) {
        await expect(
          fenced.commit("s_1", { events: [{ type: "tool.held", callId: "late" }] }),
        ).rejects.toMatchObject({ code: "lease_lost" });
      }
      expect(lost).toEqual(["s_1"]);
      expect(a.size).toBe(0);
      // Reads pass through untouched.
      expect((await fenced.readEvents("s_1", 0)).length).toBe(1);
    } finally {
      await a.close();
    }
  });

  it("finds a lease taken on renewal and reports it lost, keeping the leases it still holds", async () => {
    let now = 1_000;
    const store = new MemoryStore({ now: () => now });
    await store.createSession(session("s_1"));
    await store.createSession(session("s_2"));
    const lost: string[] = [];
    const a = ownership(store, "n_a", lost, 1_000);
    try {
      await a.claim("s_1");
      await a.claim("s_2");
      now += 5_000;
      await store.leases.acquire("s_1", "n_b", 1_000);
      await a.renewAll();
      expect(lost).toEqual(["s_1"]);
      expect(a.size).toBe(1);
      expect(await store.leases.get("s_2")).toMatchObject({ nodeId: "n_a", expiresAt: now + 1_000 });
    } finally {
      await a.close();
    }
  });
});
