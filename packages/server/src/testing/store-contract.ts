// The contract every Store keeps, as one vitest suite each implementation runs against itself
// (memory-store.test.ts, sqlite-store.test.ts, postgres-store.test.ts). A new store passes this
// before it is wired in.
import type { ApprovalRequest, ConversationItem, MessageItem } from "@patchbay/protocol";
import { afterEach, describe, expect, it } from "vitest";
import type { ApprovalRecord, PendingToolCallRecord, SessionRecord, Store } from "../store/store";

export function session(id: string, userId = "u_1", createdAt = 1): SessionRecord {
  return { id, agent: "support", userId, metadata: { plan: "pro" }, createdAt, lastSeq: 0 };
}

export function message(id: string, text: string): MessageItem {
  return { type: "message", id, role: "user", text, status: "completed", createdAt: 5 };
}

function pending(callId: string, sessionId: string, attempt = 1): PendingToolCallRecord {
  return {
    callId,
    sessionId,
    responseId: "r_1",
    name: "get_location",
    arguments: { precise: true },
    location: "page",
    attempt,
    deadline: 99,
    createdAt: 9,
  };
}

function approval(id: string, sessionId: string, outcome?: ApprovalRecord["outcome"]): ApprovalRecord {
  const request: ApprovalRequest = {
    id,
    callId: `call_${id}`,
    tool: "book",
    title: "Book it?",
    allowTitle: "Book",
    declineTitle: "No",
    argumentsHash: "h",
    expiresAt: 100,
  };
  return outcome ? { sessionId, request, outcome, decidedAt: 7 } : { sessionId, request };
}

/** Runs the store contract against fresh stores made by `open` (each test gets its own). */
export function describeStoreContract(name: string, open: () => Promise<Store>): void {
  describe(`${name} keeps the store contract`, () => {
    const opened: Store[] = [];
    afterEach(async () => {
      for (const store of opened.splice(0)) await store.close();
    });
    const fresh = async () => {
      const store = await open();
      opened.push(store);
      return store;
    };

    it("numbers events densely per session and pages the log", async () => {
      const store = await fresh();
      await store.createSession(session("s_1"));
      await store.createSession(session("s_2"));
      const first = await store.commit("s_1", {
        events: [
          { type: "tool.held", callId: "a" },
          { type: "tool.held", callId: "b" },
        ],
      });
      expect(first.events.map((e) => [e.seq, e.sessionId])).toEqual([
        [1, "s_1"],
        [2, "s_1"],
      ]);
      await store.commit("s_2", { events: [{ type: "tool.held", callId: "x" }] });
      for (let i = 0; i < 3; i++)
        await store.commit("s_1", { events: [{ type: "tool.held", callId: `c${i}` }] });
      expect((await store.readEvents("s_1", 0)).map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
      expect((await store.readEvents("s_1", 1, 2)).map((e) => e.seq)).toEqual([2, 3]);
      // A page may start and end inside one commit's events.
      expect((await store.readEvents("s_1", 0, 1)).map((e) => e.seq)).toEqual([1]);
      expect((await store.readEvents("s_1", 5)).length).toBe(0);
      expect((await store.readEvents("s_2", 0)).map((e) => e.seq)).toEqual([1]);
      expect((await store.getSession("s_1"))?.lastSeq).toBe(5);
    });

    it("keeps sessions dense when commits of many sessions interleave", async () => {
      const store = await fresh();
      const ids = ["s_a", "s_b", "s_c", "s_d"];
      for (const id of ids) await store.createSession(session(id));
      // Callers serialize one session's commits; different sessions commit at the same time.
      await Promise.all(
        ids.map(async (id) => {
          for (let i = 0; i < 10; i++)
            await store.commit(id, { events: [{ type: "tool.held", callId: `${id}${i}` }] });
        }),
      );
      for (const id of ids) {
        const events = await store.readEvents(id, 0);
        expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
        expect(events.every((e) => e.type === "tool.held" && e.callId.startsWith(id))).toBe(true);
      }
    });

    it("hands back events and items exactly as written", async () => {
      const store = await fresh();
      await store.createSession(session("s_1"));
      const item = message("m_1", 'naïve café 🚀 \u2028 "quoted" \\ back');
      const { events } = await store.commit("s_1", {
        items: [item],
        events: [{ type: "message.created", item }],
      });
      expect(await store.readEvents("s_1", 0)).toEqual(events);
      expect(await store.conversation("s_1")).toEqual([item]);
      expect(await store.getSession("s_1")).toEqual({ ...session("s_1"), lastSeq: 1 });
    });

    it("applies a change with a known command id not at all", async () => {
      const store = await fresh();
      await store.createSession(session("s_1"));
      const change = {
        command: { commandId: "c_1", kind: "message" },
        items: [message("m_1", "hi")],
        events: [],
      };
      expect((await store.commit("s_1", change)).duplicate).toBe(false);
      const again = await store.commit("s_1", {
        command: { commandId: "c_1", kind: "message" },
        items: [message("m_2", "again")],
        events: [{ type: "tool.held", callId: "x" }],
      });
      expect(again).toEqual({ events: [], duplicate: true });
      expect((await store.conversation("s_1")).map((i) => i.id)).toEqual(["m_1"]);
      expect(await store.readEvents("s_1", 0)).toEqual([]);
      expect(await store.hasCommand("s_1", "c_1")).toBe(true);
      expect(await store.hasCommand("s_1", "c_2")).toBe(false);
    });

    it("replaces an item in place and keeps insertion order, also within one change", async () => {
      const store = await fresh();
      await store.createSession(session("s_1"));
      await store.commit("s_1", { items: [message("a", "1"), message("b", "2")] });
      await store.commit("s_1", {
        items: [message("a", "1 edited"), message("c", "3"), message("c", "3 edited")],
      });
      const items: ConversationItem[] = await store.conversation("s_1");
      expect(items.map((i) => (i.type === "message" ? `${i.id}:${i.text}` : i.id))).toEqual([
        "a:1 edited",
        "b:2",
        "c:3 edited",
      ]);
    });

    it("rolls back every row of a change that fails half way", async () => {
      const store = await fresh();
      await store.createSession(session("s_1"));
      await expect(
        store.commit("s_missing", {
          items: [message("m_1", "x")],
          pendingCalls: [pending("c_1", "s_missing")],
          events: [{ type: "tool.held", callId: "c" }],
        }),
      ).rejects.toThrow(/does not exist/);
      expect(await store.conversation("s_missing")).toEqual([]);
      expect(await store.pendingCalls()).toEqual([]);
    });

    it("lists by agent and user, newest first, and deletes everything of a session", async () => {
      const store = await fresh();
      await store.createSession(session("s_old", "u_1", 1));
      await store.createSession(session("s_new", "u_1", 2));
      await store.createSession(session("s_other", "u_2", 3));
      expect((await store.listSessions({ agent: "support", userId: "u_1" })).map((s) => s.id)).toEqual([
        "s_new",
        "s_old",
      ]);
      expect((await store.listSessions({ agent: "support", limit: 2 })).map((s) => s.id)).toEqual([
        "s_other",
        "s_new",
      ]);
      expect((await store.listSessions({ agent: "other" })).length).toBe(0);
      await store.commit("s_new", {
        items: [message("m", "x")],
        events: [{ type: "tool.held", callId: "c" }],
        pendingCalls: [pending("c_new", "s_new")],
        approvals: [approval("ap_new", "s_new")],
        turn: { responseId: "r_new", sessionId: "s_new", status: "running", startedAt: 1 },
      });
      await store.putToolResult("s_new", "c_new", {
        outcome: "completed",
        content: { text: "a", images: [] },
      });
      expect(await store.deleteSession("s_new")).toBe(true);
      expect(await store.deleteSession("s_new")).toBe(false);
      expect(await store.getSession("s_new")).toBeUndefined();
      expect(await store.readEvents("s_new", 0)).toEqual([]);
      expect(await store.conversation("s_new")).toEqual([]);
      expect(await store.pendingCalls("s_new")).toEqual([]);
      expect(await store.approvals("s_new")).toEqual([]);
      expect(await store.turnsWithStatus("running")).toEqual([]);
      expect(await store.getToolResult("c_new")).toBeUndefined();
      expect((await store.getSession("s_old"))?.id).toBe("s_old");
    });

    it("keeps a session's page tools", async () => {
      const store = await fresh();
      await store.createSession(session("s_1"));
      expect(await store.pageTools("s_1")).toEqual([]);
      const tools = [{ name: "locate", description: "Where", parameters: { type: "object" as const } }];
      await store.commit("s_1", { pageTools: tools });
      expect(await store.pageTools("s_1")).toEqual(tools);
      expect(await store.pageTools("s_unknown")).toEqual([]);
    });

    it("records pending calls, replaces them by call id and removes settled ones", async () => {
      const store = await fresh();
      await store.createSession(session("s_1"));
      await store.createSession(session("s_2"));
      await store.commit("s_1", { pendingCalls: [pending("c_1", "s_1"), pending("c_2", "s_1")] });
      await store.commit("s_2", { pendingCalls: [pending("c_3", "s_2")] });
      await store.commit("s_1", { pendingCalls: [pending("c_1", "s_1", 2)], settledCalls: ["c_2"] });
      // Recorded and settled in one change: gone.
      await store.commit("s_1", { pendingCalls: [pending("c_4", "s_1")], settledCalls: ["c_4"] });
      expect((await store.pendingCalls("s_1")).map((c) => [c.callId, c.attempt])).toEqual([["c_1", 2]]);
      expect((await store.pendingCalls()).map((c) => c.callId).sort()).toEqual(["c_1", "c_3"]);
      expect((await store.pendingCalls("s_1"))[0]).toEqual(pending("c_1", "s_1", 2));
    });

    it("keeps approvals in the order asked and filters the open ones", async () => {
      const store = await fresh();
      await store.createSession(session("s_1"));
      await store.commit("s_1", { approvals: [approval("ap_1", "s_1"), approval("ap_2", "s_1")] });
      await store.commit("s_1", { approvals: [approval("ap_3", "s_1")] });
      await store.commit("s_1", { approvals: [approval("ap_1", "s_1", "allowed")] });
      expect((await store.approvals("s_1")).map((a) => [a.request.id, a.outcome ?? null])).toEqual([
        ["ap_1", "allowed"],
        ["ap_2", null],
        ["ap_3", null],
      ]);
      expect((await store.approvals("s_1", { open: true })).map((a) => a.request.id)).toEqual([
        "ap_2",
        "ap_3",
      ]);
      expect((await store.approvals("s_1"))[0]).toEqual(approval("ap_1", "s_1", "allowed"));
    });

    it("moves turns between statuses and lists them oldest first", async () => {
      const store = await fresh();
      await store.createSession(session("s_1"));
      await store.commit("s_1", {
        command: { commandId: "cmd_2", kind: "message" },
        turn: { responseId: "r_2", sessionId: "s_1", commandId: "cmd_2", status: "running", startedAt: 20 },
      });
      await store.commit("s_1", {
        turn: { responseId: "r_1", sessionId: "s_1", status: "running", startedAt: 10 },
      });
      expect((await store.turnsWithStatus("running")).map((t) => t.responseId)).toEqual(["r_1", "r_2"]);
      expect((await store.turnsWithStatus("running"))[1]).toEqual({
        responseId: "r_2",
        sessionId: "s_1",
        commandId: "cmd_2",
        status: "running",
        startedAt: 20,
      });
      await store.commit("s_1", {
        turn: { responseId: "r_1", sessionId: "s_1", status: "completed", startedAt: 10, endedAt: 15 },
      });
      expect((await store.turnsWithStatus("running")).map((t) => t.responseId)).toEqual(["r_2"]);
      expect(await store.turnsWithStatus("completed")).toEqual([
        { responseId: "r_1", sessionId: "s_1", status: "completed", startedAt: 10, endedAt: 15 },
      ]);
    });

    it("keeps the first result of a call and refuses the second", async () => {
      const store = await fresh();
      await store.createSession(session("s_1"));
      const first = { outcome: "completed" as const, content: { text: "first", images: [] } };
      const second = { outcome: "completed" as const, content: { text: "second", images: [] } };
      expect(await store.putToolResult("s_1", "c_1", first)).toBe(true);
      expect(await store.putToolResult("s_1", "c_1", second)).toBe(false);
      expect(await store.getToolResult("c_1")).toEqual(first);
      expect(await store.getToolResult("c_unknown")).toBeUndefined();
    });
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * The contract of a store's session leases (cluster mode, docs/cluster.md), for stores that keep
 * them (memory, Postgres). Expiry is real time: leases here live 60-150 ms.
 */
export function describeLeaseContract(name: string, open: () => Promise<Store>): void {
  describe(`${name} keeps the lease contract`, () => {
    const opened: Store[] = [];
    afterEach(async () => {
      for (const store of opened.splice(0)) await store.close();
    });
    const fresh = async () => {
      const store = await open();
      opened.push(store);
      if (!store.leases) throw new Error(`${name} keeps no leases`);
      return { store, leases: store.leases };
    };

    it("gives a free session to the first node, extends it for its owner and refuses it to others", async () => {
      const { store, leases } = await fresh();
      await store.createSession(session("s_1"));
      expect(await leases.get("s_1")).toBeUndefined();
      expect(await leases.acquire("s_1", "n_a", 10_000)).toEqual({ acquired: true, token: 1, fresh: true });
      expect(await leases.acquire("s_1", "n_a", 10_000)).toEqual({ acquired: true, token: 1, fresh: false });
      const refused = await leases.acquire("s_1", "n_b", 10_000);
      expect(refused).toMatchObject({ acquired: false, owner: "n_a" });
      expect(refused.acquired === false && refused.expiresAt).toBeGreaterThan(Date.now() + 5_000);
      expect(await leases.get("s_1")).toMatchObject({ sessionId: "s_1", nodeId: "n_a", token: 1 });
      // Leases are per session.
      expect(await leases.acquire("s_2", "n_b", 10_000)).toEqual({ acquired: true, token: 1, fresh: true });
    });

    it("lets another node take an expired lease with a higher token, fencing the old owner out", async () => {
      const { store, leases } = await fresh();
      await store.createSession(session("s_1"));
      const a = await leases.acquire("s_1", "n_a", 60);
      if (!a.acquired) throw new Error("n_a should own s_1");
      await store.commit("s_1", { fence: a.token, events: [{ type: "tool.held", callId: "a1" }] });
      await sleep(120);
      expect((await leases.expired(10)).map((l) => [l.sessionId, l.nodeId])).toEqual([["s_1", "n_a"]]);
      const b = await leases.acquire("s_1", "n_b", 10_000);
      expect(b).toEqual({ acquired: true, token: a.token + 1, fresh: true });
      expect(await leases.expired(10)).toEqual([]);
      // The old owner can neither renew nor write, and its refused change leaves nothing behind.
      expect(await leases.renew("s_1", "n_a", a.token, 10_000)).toBe(false);
      const error = await store
        .commit("s_1", {
          fence: a.token,
          command: { commandId: "cmd_late", kind: "message" },
          items: [message("m_late", "late")],
          events: [{ type: "tool.held", callId: "a2" }],
        })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ code: "lease_lost", name: "LeaseLostError" });
      expect(await store.hasCommand("s_1", "cmd_late")).toBe(false);
      expect(await store.conversation("s_1")).toEqual([]);
      await store.commit("s_1", { fence: 2, events: [{ type: "tool.held", callId: "b1" }] });
      expect(
        (await store.readEvents("s_1", 0)).map((e) => [e.seq, e.type === "tool.held" && e.callId]),
      ).toEqual([
        [1, "a1"],
        [2, "b1"],
      ]);
      expect(await leases.renew("s_1", "n_b", 2, 10_000)).toBe(true);
    });

    it("releases a lease at once but keeps its token growing, and ignores a release by a non-owner", async () => {
      const { store, leases } = await fresh();
      await store.createSession(session("s_1"));
      await leases.acquire("s_1", "n_a", 10_000);
      await leases.release("s_1", "n_b", 1);
      await leases.release("s_1", "n_a", 7);
      expect(await leases.acquire("s_1", "n_b", 10_000)).toMatchObject({ acquired: false, owner: "n_a" });
      await leases.release("s_1", "n_a", 1);
      // A released lease is not one a dead node left: the takeover sweep has nothing to do.
      expect(await leases.expired(10)).toEqual([]);
      expect(await leases.acquire("s_1", "n_b", 10_000)).toEqual({ acquired: true, token: 2, fresh: true });
      await leases.release("s_1", "n_b", 2);
      expect(await leases.acquire("s_1", "n_b", 10_000)).toEqual({ acquired: true, token: 3, fresh: true });
      expect(await store.deleteSession("s_1")).toBe(true);
      expect(await leases.get("s_1")).toBeUndefined();
    });

    it("gives a session raced for by several nodes to exactly one of them", async () => {
      const { store, leases } = await fresh();
      await store.createSession(session("s_1"));
      const attempts = await Promise.all(
        ["n_a", "n_b", "n_c", "n_d"].map((node) => leases.acquire("s_1", node, 10_000)),
      );
      const won = attempts.filter((a) => a.acquired);
      expect(won).toEqual([{ acquired: true, token: 1, fresh: true }]);
      const owner = (await leases.get("s_1"))?.nodeId;
      for (const attempt of attempts) if (!attempt.acquired) expect(attempt.owner).toBe(owner);
    });

    it("never lands a write of the old owner after the new owner's, while both keep writing", async () => {
      const { store, leases } = await fresh();
      await store.createSession(session("s_1"));
      const a = await leases.acquire("s_1", "n_a", 150);
      if (!a.acquired) throw new Error("n_a should own s_1");
      let lost: unknown;
      const oldOwner = (async () => {
        for (let i = 0; i < 400 && !lost; i++) {
          await store
            .commit("s_1", { fence: a.token, events: [{ type: "tool.held", callId: `a${i}` }] })
            .catch((e: unknown) => {
              lost = e;
            });
          await sleep(2);
        }
      })();
      let b: Awaited<ReturnType<typeof leases.acquire>> = await leases.acquire("s_1", "n_b", 10_000);
      for (let i = 0; i < 200 && !b.acquired; i++) {
        await sleep(10);
        b = await leases.acquire("s_1", "n_b", 10_000);
      }
      if (!b.acquired) throw new Error("n_b never got the expired lease");
      for (let i = 0; i < 5; i++)
        await store.commit("s_1", { fence: b.token, events: [{ type: "tool.held", callId: `b${i}` }] });
      await oldOwner;
      expect(lost).toMatchObject({ code: "lease_lost" });
      const ids = (await store.readEvents("s_1", 0)).map((e) => (e.type === "tool.held" ? e.callId : ""));
      const firstB = ids.indexOf("b0");
      expect(firstB).toBeGreaterThan(0);
      expect(ids.slice(firstB)).toEqual(["b0", "b1", "b2", "b3", "b4"]);
      expect(ids.slice(0, firstB).every((id) => id.startsWith("a"))).toBe(true);
    });
  });
}
