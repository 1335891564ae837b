import { type Client, ResponseFailedError } from "@patchbay/client";
import type { AgentFileInput } from "@patchbay/server";
import { afterEach, describe, expect, it } from "vitest";
import { type DispatchHarness, eventually, startDispatchHarness } from "../fixtures/dispatch-harness";
import { backendClient, closeAllClients, userClient } from "./helpers/clients";

const agents: Record<string, AgentFileInput> = {
  support: {
    model: {
      provider: "scripted",
      rules: [{ match: "^(?<text>.*)$", reply: "Model says: {text}" }],
    },
    dispatch: { text: "enabled" },
  },
};

let harness: DispatchHarness | undefined;

afterEach(async () => {
  closeAllClients();
  await harness?.close();
  harness = undefined;
});

function backend(): Client {
  return backendClient(harness!);
}

/** A client acting as user `userId` with a user token: its messages go to a worker first. */
async function user(userId = "u_1"): Promise<Client> {
  return userClient(harness!, userId);
}

interface WorkRow {
  work_id: string;
  worker: string;
  text: string;
  started_at: number;
  finished_at: number | null;
}

function workRows(): WorkRow[] {
  return harness!.db.prepare("SELECT * FROM work ORDER BY started_at").all() as WorkRow[];
}

const message = (text: string, metadata: Record<string, unknown> = {}) => ({
  channel: { type: "sms", id: `+1555${Math.floor(Math.random() * 1e6)}` },
  userId: "u_sms",
  text,
  metadata,
});

describe("dispatch routing (real server, worker processes, client)", () => {
  it("sends work to the worker with the most free capacity, queues when all are full, and bounds the queue", async () => {
    harness = await startDispatchHarness(agents, { maxQueue: 1 });
    await Promise.all([
      harness.worker({ id: "w_small", capacity: 1, messages: true }),
      harness.worker({ id: "w_big", capacity: 3, messages: true }),
    ]);
    const receipts = [];
    for (let i = 1; i <= 5; i++) {
      receipts.push(
        await harness.post("/v1/agents/support/inbound/messages", message(`m${i}`, { holdMs: 1_200 })),
      );
    }
    expect(receipts.map((r) => [r.status, r.body.status])).toEqual([
      [202, "offered"],
      [202, "offered"],
      [202, "offered"],
      [202, "offered"],
      [202, "queued"],
    ]);
    const full = await harness.post("/v1/agents/support/inbound/messages", message("m6", { holdMs: 1 }));
    expect(full.status).toBe(503);
    expect(full.body.error.code).toBe("queue_full");

    const early = ["m1", "m2", "m3", "m4"];
    const started = await eventually(workRows, (rows) =>
      early.every((text) => rows.some((r) => r.text === text)),
    );
    const firstFour = started.filter((r) => early.includes(r.text));
    const byWorker = (rows: WorkRow[]) => {
      const grouped: Record<string, string[]> = {};
      for (const row of rows) grouped[row.worker] = [...(grouped[row.worker] ?? []), row.text];
      return grouped;
    };
    // Most free first (big: 3 free, then 2), then the tie (1 and 1) goes to the one given nothing yet.
    expect(byWorker(firstFour)).toEqual({ w_big: ["m1", "m2", "m4"], w_small: ["m3"] });

    const all = await eventually(
      workRows,
      (rows) => rows.length === 5 && rows.every((r) => r.finished_at !== null),
    );
    const fifth = all.find((r) => r.text === "m5")!;
    const firstFinished = Math.min(...all.filter((r) => r.text !== "m5").map((r) => r.finished_at!));
    // The queued message waited for a slot: it started only once an earlier one finished.
    expect(fifth.started_at).toBeGreaterThanOrEqual(firstFinished);
    const metrics = await (await fetch(`${harness.server.url}/metrics`)).text();
    expect(metrics).toMatch(/patchbay_dispatch_work_total\{kind="message",event="dropped"\} 1/);
    expect(metrics).toMatch(/patchbay_workers_connected 2/);
  });

  it("drops work when no worker is connected and tells the sender, over HTTP and on a session", async () => {
    harness = await startDispatchHarness(agents);
    const dropped = await harness.post("/v1/agents/support/inbound/messages", message("anyone?"));
    expect(dropped).toEqual({ status: 503, body: { error: expect.objectContaining({ code: "no_worker" }) } });
    const call = await harness.post("/v1/agents/support/inbound/calls", {
      from: "+15550100",
      to: "+15550199",
    });
    expect(call.status).toBe(503);

    const session = await (await user()).agent("support").sessions.create();
    const error = await session.responses.create("hello?").then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ResponseFailedError);
    expect((error as ResponseFailedError).wireCode).toBe("no_worker");
  });

  it("sends a user's message to a worker first; `answer` lets the model reply", async () => {
    harness = await startDispatchHarness(agents);
    await harness.worker({ id: "w_1", capacity: 1, messages: true });
    const session = await (await user()).agent("support").sessions.create();
    const thinking: string[] = [];
    session.on("event", (event) => {
      if (event.type === "response.thinking") thinking.push(event.reason);
    });
    const reply = await session.responses.create("Where is my order?");
    expect(reply.text).toBe("Model says: Where is my order?");
    expect(thinking).toEqual(["dispatch"]);
    expect(workRows().map((r) => [r.worker, r.text])).toEqual([["w_1", "Where is my order?"]]);
  });

  it("sends a message the backend sends with the API key straight to the model", async () => {
    harness = await startDispatchHarness(agents);
    await harness.worker({ id: "w_1", capacity: 1, messages: true });
    const session = await backend().agent("support").sessions.create({ userId: "u_1" });
    const thinking: string[] = [];
    session.on("event", (event) => {
      if (event.type === "response.thinking") thinking.push(event.reason);
    });
    expect((await session.responses.create("From the backend")).text).toBe("Model says: From the backend");
    expect(thinking).toEqual([]);
    expect(workRows()).toEqual([]);
  });

  it("refuses messages with images for routing, on a session and over HTTP", async () => {
    harness = await startDispatchHarness(agents);
    await harness.worker({ id: "w_1", capacity: 2, messages: true });
    const session = await (await user()).agent("support").sessions.create();
    const error = await session.responses
      .create("What is on this photo?", { images: [{ type: "image", url: "https://example.com/a.png" }] })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect((error as ResponseFailedError).wireCode).toBe("unsupported_content");
    const http = await harness.post("/v1/agents/support/inbound/messages", {
      ...message("look"),
      images: [{ type: "image", url: "https://example.com/a.png" }],
    });
    expect(http.status).toBe(422);
    expect(http.body.error.code).toBe("unsupported_content");
    expect(workRows()).toEqual([]);
    // Text still flows after a refusal.
    expect((await session.responses.create("plain text")).text).toBe("Model says: plain text");
  });

  it("opens one session per channel with sessionFor and reuses it, on a worker of capacity 1", async () => {
    harness = await startDispatchHarness(agents);
    // The channel handler holds the only slot while it waits for its session's reply: the reply's
    // message, sent with the API key, goes straight to the model, so nothing waits for a slot.
    await harness.worker({ id: "w_1", capacity: 1, messages: true });
    const channel = { type: "sms", id: "+15550123" };
    for (const text of ["first", "second"]) {
      const res = await harness.post("/v1/agents/support/inbound/messages", {
        channel,
        userId: "u_sms",
        text,
        metadata: { chat: true },
      });
      expect(res.status).toBe(202);
      await eventually(
        () => harness!.db.prepare("SELECT COUNT(*) AS n FROM replies").get() as { n: number },
        (row) => row.n >= (text === "first" ? 1 : 2),
      );
    }
    const replies = harness.db.prepare("SELECT * FROM replies ORDER BY rowid").all() as Array<{
      channel_id: string;
      session_id: string;
      text: string;
    }>;
    expect(replies.map((r) => r.text)).toEqual(["Model says: first", "Model says: second"]);
    expect(replies[0]!.session_id).toBe(replies[1]!.session_id);
    expect(replies[0]!.channel_id).toBe("+15550123");
  });

  it("routes an inbound call to a worker's onCall", async () => {
    harness = await startDispatchHarness(agents);
    await harness.worker({ id: "w_calls", capacity: 1, calls: true });
    const res = await harness.post("/v1/agents/support/inbound/calls", {
      from: "+15550100",
      to: "+15550199",
      customData: { campaign: "spring" },
    });
    expect(res.status).toBe(202);
    const rows = await eventually(workRows, (r) => r.length === 1);
    expect(rows[0]).toMatchObject({ worker: "w_calls", text: "+15550100->+15550199" });
  });
});
