import type { AgentFileInput } from "@patchbay/server";
import { afterEach, describe, expect, it } from "vitest";
import { type DispatchHarness, eventually, startDispatchHarness } from "../fixtures/dispatch-harness";

const agents: Record<string, AgentFileInput> = {
  support: {
    model: { provider: "scripted", rules: [{ match: ".", reply: "ok" }] },
    dispatch: { text: "enabled" },
  },
};

let harness: DispatchHarness | undefined;

afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

interface WorkRow {
  work_id: string;
  worker: string;
  text: string;
  attempt: number;
  finished_at: number | null;
}

const rows = () => harness!.db.prepare("SELECT * FROM work ORDER BY started_at").all() as WorkRow[];

const inbound = (text: string, holdMs = 0) =>
  harness!.post("/v1/agents/support/inbound/messages", {
    channel: { type: "sms", id: "+15550100" },
    userId: "u_1",
    text,
    metadata: { holdMs },
  });

describe("dispatch worker lifecycle (real processes)", () => {
  it("stop() drains: the running message finishes, new work goes elsewhere, the process exits cleanly", async () => {
    harness = await startDispatchHarness(agents);
    const draining = await harness.worker({
      id: "w_drain",
      capacity: 1,
      messages: true,
      stopTimeoutMs: 10_000,
    });
    const other = await harness.worker({ id: "w_other", capacity: 1, messages: true });
    // w_drain connected first: with equal room, it gets the first message.
    const first = await inbound("long job", 1_500);
    expect(first.body.status).toBe("offered");
    // The handler's first act is the row: once it is there, the message runs on w_drain.
    const started = await eventually(rows, (r) => r.length === 1);
    expect(started[0]).toMatchObject({ worker: "w_drain", text: "long job" });

    const exited = draining.kill("SIGTERM");
    await draining.waitFor("draining");
    const during = await inbound("while draining");
    expect(during.status).toBe(202);
    await other.waitFor("work.finished");

    const stopped = await draining.waitFor("stopped");
    expect(stopped).toMatchObject({ drained: true, unfinished: { work: [], calls: [] } });
    expect(await exited).toBe(0);
    const done = rows();
    expect(done.map((r) => [r.worker, r.text, r.finished_at !== null])).toEqual([
      ["w_drain", "long job", true],
      ["w_other", "while draining", true],
    ]);
    await eventually(
      () => harness!.dispatch.registry.size,
      (n) => n === 1,
    );
  });

  it("a worker killed and restarted gets its unfinished work back as attempt 2, then new work", async () => {
    harness = await startDispatchHarness(agents);
    const first = await harness.worker({ id: "w_phoenix", capacity: 1, messages: true });
    const receipt = await inbound("interrupted job", 5_000);
    // Kill it only once its handler has written its row (the event line may come first).
    await eventually(rows, (r) => r.some((row) => row.work_id === receipt.body.workId && row.attempt === 1));
    await first.kill("SIGKILL");
    await eventually(
      () => harness!.dispatch.registry.size,
      (n) => n === 0,
    );
    // Nothing to send new work to now: the sender is told at once.
    const refused = await inbound("nobody home");
    expect(refused.status).toBe(503);
    expect(refused.body.error.code).toBe("no_worker");

    // The same worker comes back (same id): it gets the work it never finished, as attempt 2,
    // and then new work.
    const restarted = await harness.worker({ id: "w_phoenix", capacity: 1, messages: true });
    await restarted.waitFor("work.started", (e) => e.workId === receipt.body.workId);
    const retried = await eventually(rows, (r) => r.some((row) => row.attempt === 2));
    expect(retried.filter((r) => r.work_id === receipt.body.workId).map((r) => r.attempt)).toEqual([1, 2]);
    await restarted.waitFor("work.finished", (e) => e.workId === receipt.body.workId, 10_000);
    // The worker logs work.finished before the server has read its work.done: new work is offered
    // once the server has freed the slot (until then it would be queued, which is right too).
    await eventually(
      () => {
        const worker = harness!.dispatch.registry.get("w_phoenix");
        return worker ? harness!.dispatch.registry.free(worker) : 0;
      },
      (free) => free === 1,
    );
    const after = await inbound("back again");
    expect(after.body.status).toBe("offered");
    await restarted.waitFor("work.finished", (e) => e.workId === after.body.workId);
  });
});
