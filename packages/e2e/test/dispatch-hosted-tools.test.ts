import type { Session } from "@patchbay/client";
import type { AgentFileInput } from "@patchbay/server";
import { afterEach, describe, expect, it } from "vitest";
import {
  type DispatchHarness,
  eventually,
  PAY_RULE,
  startDispatchHarness,
  type WorkerProcess,
} from "../fixtures/dispatch-harness";
import { backendClient, closeAllClients } from "./helpers/clients";

const agents: Record<string, AgentFileInput> = {
  support: {
    model: {
      provider: "scripted",
      rules: [
        PAY_RULE,
        {
          match: "slow",
          toolCalls: [{ tool: "slow_lookup", arguments: {} }],
          reply: "Got {result}",
          errorReply: "Lookup failed: {result}",
        },
      ],
    },
  },
};

let harness: DispatchHarness | undefined;

afterEach(async () => {
  closeAllClients();
  await harness?.close();
  harness = undefined;
});

async function session(): Promise<Session> {
  const client = backendClient(harness!);
  return client.agent("support").sessions.create({ userId: "u_1" });
}

interface Delivery {
  call_id: string;
  worker: string;
  attempt: number;
}

function deliveries(): Delivery[] {
  return harness!.db
    .prepare("SELECT call_id, worker, attempt FROM deliveries ORDER BY at")
    .all() as Delivery[];
}

function effects(): Array<{ call_id: string; worker: string; amount: number }> {
  return harness!.db.prepare("SELECT call_id, worker, amount FROM effects").all() as Array<{
    call_id: string;
    worker: string;
    amount: number;
  }>;
}

/** The worker (of several) that printed an `effect` event first. */
async function firstEffect(workers: WorkerProcess[]): Promise<{ worker: WorkerProcess; callId: string }> {
  const found = await eventually(
    () => workers.find((w) => w.events.some((e) => e.event === "effect")),
    (w) => w !== undefined,
  );
  const event = found!.events.find((e) => e.event === "effect")!;
  return { worker: found!, callId: String(event.callId) };
}

describe("hosted tools across worker processes", () => {
  it("runs a hosted tool on a worker and gives the model its result", async () => {
    harness = await startDispatchHarness(agents);
    await harness.worker({ id: "w_1", capacity: 1, hostTools: true });
    const s = await session();
    const reply = await s.responses.create("pay 5");
    expect(reply.text).toBe("Done: payment of 5 recorded by w_1, answered by w_1");
    const call = s.conversation.find((item) => item.type === "tool_call");
    expect(call).toMatchObject({ name: "record_payment", status: "completed", location: "worker" });
  });

  it("tells the model a hosted tool timed out after the worker's toolTimeoutMs, and stops the call there", async () => {
    harness = await startDispatchHarness(agents);
    const w = await harness.worker({ id: "w_1", capacity: 1, hostTools: true, toolTimeoutMs: 800 });
    const s = await session();
    const started = Date.now();
    const reply = await s.responses.create("slow please");
    const elapsed = Date.now() - started;
    expect(reply.text).toMatch(/^Lookup failed: .*800 ms/);
    expect(elapsed).toBeGreaterThanOrEqual(800);
    expect(elapsed).toBeLessThan(5_000);
    expect(s.conversation.find((item) => item.type === "tool_call")).toMatchObject({ status: "timed_out" });
    await w.waitFor("slow.stopped");
  });

  it("finishes a call once on the other worker when its worker is killed in the middle (SIGKILL)", async () => {
    harness = await startDispatchHarness(agents);
    const workers = await Promise.all([
      harness.worker({ id: "w_a", capacity: 1, hostTools: true, toolDelayMs: 2_500 }),
      harness.worker({ id: "w_b", capacity: 1, hostTools: true, toolDelayMs: 2_500 }),
    ]);
    const s = await session();
    const reply = s.responses.create("pay 42");
    const { worker: victim, callId } = await firstEffect(workers);
    const survivor = workers.find((w) => w !== victim)!;
    expect(await victim.kill("SIGKILL")).toBeNull();

    const result = await reply;
    expect(result.text).toBe(
      `Done: payment of 42 recorded by ${victim.config.id}, answered by ${survivor.config.id}`,
    );
    // The side effect happened once, keyed by the call id, though the call ran on both workers.
    expect(effects()).toEqual([{ call_id: callId, worker: victim.config.id, amount: 42 }]);
    expect(deliveries()).toEqual([
      { call_id: callId, worker: victim.config.id, attempt: 1 },
      { call_id: callId, worker: survivor.config.id, attempt: 2 },
    ]);
    expect(s.conversation.find((item) => item.type === "tool_call")).toMatchObject({
      id: callId,
      status: "completed",
    });
    // The result reached the model through the server; the survivor's own line may lag behind it.
    await survivor.waitFor("hosted.finished", (e) => e.callId === callId);
    expect(survivor.events.filter((e) => e.event === "hosted.finished" && e.callId === callId)).toHaveLength(
      1,
    );
  });

  it("gives a call to the same worker when it restarts, within the call's timeout", async () => {
    harness = await startDispatchHarness(agents);
    const first = await harness.worker({ id: "w_restart", capacity: 1, hostTools: true, toolDelayMs: 1_500 });
    const s = await session();
    const reply = s.responses.create("pay 7");
    const { callId } = await firstEffect([first]);
    await first.kill("SIGKILL");
    await eventually(
      () => harness!.dispatch.registry.size,
      (n) => n === 0,
    );

    const again = await harness.worker({ id: "w_restart", capacity: 1, hostTools: true, toolDelayMs: 200 });
    expect((await reply).text).toBe("Done: payment of 7 recorded by w_restart, answered by w_restart");
    expect(effects()).toHaveLength(1);
    expect(deliveries().map((d) => [d.call_id, d.attempt])).toEqual([
      [callId, 1],
      [callId, 2],
    ]);
    expect(
      again.events.some((e) => e.event === "hosted.started" && e.callId === callId && e.attempt === 2),
    ).toBe(true);
  });
});
