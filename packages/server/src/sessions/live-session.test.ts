// A LiveSession on a SqliteStore (which writes groups, as the server's default store does) and on
// a real PostgreSQL (one change at a time; see testing/postgres-server.ts), with the offline
// scripted model: how a message's commit and its turn's first changes are written,
// and that a command id seen before never starts a second turn.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createModel } from "@patchbay/models";
import type { SessionEvent } from "@patchbay/protocol";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { defineAgent } from "../config/agent-config";
import { silentLogger } from "../observability/logger";
import { ServerMetrics } from "../observability/metrics";
import { PostgresStore } from "../store/postgres-store";
import { SqliteStore } from "../store/sqlite-store";
import type { SessionChange, Store } from "../store/store";
import { startTestPostgres, type TestPostgres } from "../testing/postgres-server";
import { LiveSession } from "./live-session";
import { SessionLog } from "./session-log";

let server: TestPostgres | undefined;
let dir: string | undefined;
let store: Store | undefined;
afterEach(async () => {
  await store?.close();
  store = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
  dir = undefined;
});
afterAll(async () => {
  await server?.stop();
});

const agent = defineAgent("a", {
  model: { provider: "scripted", rules: [{ match: "hello", reply: "Hi there." }] },
});

let schemas = 0;
const stores = {
  // Writes groups (commitMany), as the server's default store does.
  SqliteStore: async (): Promise<Store> => {
    dir = mkdtempSync(join(tmpdir(), "patchbay-live-"));
    return new SqliteStore({ dataDir: dir });
  },
  // Writes one change at a time, over the network.
  PostgresStore: async (): Promise<Store> => {
    server ??= await startTestPostgres();
    return PostgresStore.open({ url: server.url, schema: `live${process.pid}_${++schemas}` });
  },
};

/**
 * A live session on the store `open` makes; `transactions` lists each transaction's changes, and
 * `failNext` makes the next transaction carrying a command id fail.
 */
async function liveSession(
  open: () => Promise<Store>,
  created: boolean,
): Promise<{
  live: LiveSession;
  events: SessionEvent[];
  /** The store's `hasCommand` reads. */
  checks: { reads: number };
  transactions: SessionChange[][];
  failNext(): void;
}> {
  const opened = await open();
  store = opened;
  const record = { id: "s_1", agent: "a", userId: "u_1", metadata: {}, createdAt: 0, lastSeq: 0 };
  await opened.createSession(record);
  const transactions: SessionChange[][] = [];
  let failing = false;
  const write = <T>(changes: SessionChange[], go: () => Promise<T>): Promise<T> => {
    if (failing && changes.some((change) => change.command)) {
      failing = false;
      return Promise.reject(new Error("disk full"));
    }
    transactions.push(changes);
    return go();
  };
  const commit = opened.commit.bind(opened);
  opened.commit = (sessionId, change) => write([change], () => commit(sessionId, change));
  const commitMany = opened.commitMany?.bind(opened);
  if (commitMany) {
    opened.commitMany = (writes) =>
      write(
        writes.map((w) => w.change),
        () => commitMany(writes),
      );
  }
  const checks = { reads: 0 };
  const hasCommand = opened.hasCommand.bind(opened);
  opened.hasCommand = (sessionId, commandId) => {
    checks.reads++;
    return hasCommand(sessionId, commandId);
  };
  const log = new SessionLog(record, agent, [], opened, silentLogger, [], created);
  const events: SessionEvent[] = [];
  log.subscribe((event) => events.push(event));
  const live = new LiveSession(log, {
    model: createModel(agent.model),
    logger: silentLogger,
    metrics: new ServerMetrics(),
    progressIntervalMs: 10,
  });
  return {
    live,
    events,
    checks,
    transactions,
    failNext: () => {
      failing = true;
    },
  };
}

const types = (events: SessionEvent[]) => events.map((event) => event.type);

// Each store with a log that reads command ids from the store (a session loaded), and with one made
// at the session's creation, which knows them all and reads none.
const setups = Object.entries(stores).flatMap(([name, open]) => [
  [name, open, false] as const,
  [`${name}, the log made at the session's creation`, open, true] as const,
]);

describe.each(setups)("LiveSession.sendMessage on a %s", (name, open, created) => {
  it("writes a message to an idle session in one transaction with its turn's start", {
    timeout: 60_000,
  }, async () => {
    const { live, events, transactions } = await liveSession(open, created);
    const sent = await live.sendMessage({ commandId: "c_1", text: "hello" });
    expect(sent).toEqual({ duplicate: false, responseId: expect.stringMatching(/^r_/) });
    await live.idle();
    expect(types(events)).toEqual([
      "message.created",
      "response.started",
      "conversation.updated",
      "text.delta",
      "message.completed",
      "response.completed",
    ]);
    // The model saw the message before it was written: its reply is the rule's.
    expect(events.at(-1)).toMatchObject({ type: "response.completed", text: "Hi there.", reason: "stop" });
    const [first] = transactions[0]!;
    expect(first!.command).toEqual({ commandId: "c_1", kind: "message" });
    expect(first!.events?.slice(0, 2).map((event) => event.type)).toEqual([
      "message.created",
      "response.started",
    ]);
    expect(first!.turn).toMatchObject({ responseId: sent.responseId });
    expect(first!.turn?.status).not.toBe("queued");
    if (name.startsWith("SqliteStore")) {
      // Its writes wait for the end of the tick: the scripted reply, one burst, joins them too.
      expect(transactions).toHaveLength(1);
      expect(transactions[0]).toHaveLength(1);
    }
    const [turn] = await store!.turnsWithStatus("completed");
    expect(turn).toMatchObject({ responseId: sent.responseId, commandId: "c_1" });
    expect(await store!.turnsWithStatus("queued")).toEqual([]);
  });

  it("answers a command id seen before as a duplicate and starts no second turn, idle or busy", async () => {
    const { live, events, checks } = await liveSession(open, created);
    await live.sendMessage({ commandId: "c_1", text: "hello" });
    await live.idle();
    expect(await live.sendMessage({ commandId: "c_1", text: "hello" })).toEqual({ duplicate: true });
    // Sent twice in one tick: the second waits for the first's check and sees it queued.
    const both = await Promise.all([
      live.sendMessage({ commandId: "c_2", text: "hello" }),
      live.sendMessage({ commandId: "c_2", text: "hello" }),
    ]);
    expect(both.map((answer) => answer.duplicate)).toEqual([false, true]);
    await live.idle();
    expect(types(events).filter((type) => type === "message.created")).toHaveLength(2);
    expect(types(events).filter((type) => type === "response.started")).toHaveLength(2);
    expect(await store!.turnsWithStatus("completed")).toHaveLength(2);
    // The messages were checked from memory by a log that knows every command id, else by the store.
    if (created) expect(checks.reads).toBe(0);
    else expect(checks.reads).toBeGreaterThan(0);
  });

  it("keeps messages in the order they came while the first one's command id is checked", async () => {
    const { live, events } = await liveSession(open, created);
    const answers = await Promise.all([
      live.sendMessage({ commandId: "c_1", text: "hello one" }),
      live.sendMessage({ commandId: "c_2", text: "hello two" }),
    ]);
    expect(answers.map((answer) => answer.duplicate)).toEqual([false, false]);
    await live.idle();
    const order = events.flatMap((event) => (event.type === "message.created" ? [event.commandId] : []));
    expect(order).toEqual(["c_1", "c_2"]);
    // The first turn ends (its burst of a reply was made before the second message was written,
    // so it may end either way), then the second answers.
    const ends = events.flatMap((event) =>
      event.type === "response.completed" ? [[event.commandId, event.reason]] : [],
    );
    expect(ends).toEqual([
      ["c_1", expect.stringMatching(/^(stop|interrupted)$/)],
      ["c_2", "stop"],
    ]);
  });

  it("starts nothing when the message's commit fails: no turn, no event, and the next message works", async () => {
    const { live, events, failNext } = await liveSession(open, created);
    failNext();
    await expect(live.sendMessage({ commandId: "c_1", text: "hello" })).rejects.toThrow("disk full");
    await live.idle();
    expect(events).toEqual([]);
    expect(await store!.readEvents("s_1", 0)).toEqual([]);
    expect(await store!.conversation("s_1")).toEqual([]);
    for (const status of ["queued", "running", "completed", "failed", "interrupted"] as const) {
      expect(await store!.turnsWithStatus(status)).toEqual([]);
    }
    // The client sends it again with the same command id: it was never written, so it runs now.
    expect(await live.sendMessage({ commandId: "c_1", text: "hello" })).toMatchObject({ duplicate: false });
    await live.idle();
    expect(types(events)).toContain("response.completed");
    expect(await store!.turnsWithStatus("completed")).toHaveLength(1);
  });
});
