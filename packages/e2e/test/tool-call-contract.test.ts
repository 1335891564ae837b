// The tool-call contract of issue 12, end to end through real processes: a worker process (over
// a loopback proxy that adds link latency), the server, and a session client.
import { join } from "node:path";
import type { Session } from "@patchbay/client";
import type { ToolCallItem } from "@patchbay/protocol";
import type { AgentFileInput } from "@patchbay/server";
import { afterEach, describe, expect, it } from "vitest";
import { DelayProxy } from "../fixtures/delay-proxy";
import {
  type DispatchHarness,
  eventually,
  startDispatchHarness,
  WorkerProcess,
} from "../fixtures/dispatch-harness";
import { backendClient, closeAllClients } from "./helpers/clients";

const agents: Record<string, AgentFileInput> = {
  support: {
    model: {
      provider: "scripted",
      rules: [
        {
          match: "change",
          toolCalls: [{ tool: "held_change", arguments: {} }],
          reply: "{result}",
          errorReply: "{result}",
        },
        {
          match: "book (?<delay>\\d+)",
          toolCalls: [{ tool: "book", arguments: { delay_ms: "{delay:integer}" } }],
          reply: "{result}",
          errorReply: "{result}",
        },
        { match: "quick", toolCalls: [{ tool: "quick_probe", arguments: {} }], reply: "{result}" },
        {
          match: "long",
          toolCalls: [{ tool: "long_probe", arguments: {} }],
          reply: "{result}",
          errorReply: "{result}",
        },
        {
          match: "slow",
          toolCalls: [{ tool: "slow_change", arguments: {} }],
          reply: "{result}",
          errorReply: "{result}",
        },
      ],
    },
  },
};

/** The tables a contract worker writes (see fixtures/contract-worker.ts). */
const contractTables = `
  CREATE TABLE bookings (call_id TEXT PRIMARY KEY, worker TEXT, at INTEGER);
  CREATE TABLE changes (call_id TEXT, worker TEXT, outcome TEXT, elapsed_ms INTEGER, attempt INTEGER);
`;

let harness: DispatchHarness | undefined;
const proxies: DelayProxy[] = [];
const workers: WorkerProcess[] = [];

afterEach(async () => {
  closeAllClients();
  await Promise.all(workers.splice(0).map((w) => w.kill("SIGKILL")));
  for (const proxy of proxies.splice(0)) await proxy.close();
  await harness?.close();
  harness = undefined;
});

async function start(): Promise<DispatchHarness> {
  harness = await startDispatchHarness(agents);
  harness.db.exec(contractTables);
  return harness;
}

/** A contract worker process, connected through a proxy with the given link delay. */
async function worker(
  h: DispatchHarness,
  config: { id: string; toolTimeoutMs?: number; slowChangeMs?: number },
  delayMs = { up: 0, down: 0 },
): Promise<{ worker: WorkerProcess; proxy: DelayProxy }> {
  const proxy = await DelayProxy.start(h.server.url, delayMs);
  proxies.push(proxy);
  const process = new WorkerProcess({ ...config, db: h.dbPath }, proxy.url, {
    file: join(import.meta.dirname, "../fixtures/contract-worker.ts"),
    configVar: "CONTRACT_WORKER",
  });
  await process.waitFor("ready", (e) => e.reconnected === false);
  workers.push(process);
  return { worker: process, proxy };
}

async function session(h: DispatchHarness): Promise<Session> {
  const client = backendClient(h);
  return client.agent("support").sessions.create({ userId: "u_1" });
}

function toolCall(s: Session, name: string): ToolCallItem {
  const item = s.conversation.find((i): i is ToolCallItem => i.type === "tool_call" && i.name === name);
  if (!item) throw new Error(`no ${name} call in the conversation`);
  return item;
}

describe("a held call that times out (finding 1), on a worker", () => {
  it("aborts the held signal at the timeout and tells the model once", async () => {
    const h = await start();
    await worker(h, { id: "w_1" });
    const s = await session(h);
    const started = Date.now();
    const reply = await s.responses.create("change it");
    const row = await eventually(
      () =>
        h.db.prepare("SELECT outcome, elapsed_ms FROM changes").get() as
          | { outcome: string; elapsed_ms: number }
          | undefined,
      (r) => r !== undefined,
    );
    expect(row?.outcome).toBe("aborted");
    expect(row?.elapsed_ms).toBeLessThan(1_500);
    expect(Date.now() - started).toBeLessThan(2_400);
    expect(reply.text).toBe('The call of "held_change" timed out after 700 ms.');
    const item = toolCall(s, "held_change");
    expect(item).toMatchObject({ status: "timed_out", held: true });
    // Told once: the one result; the worker's own answer after the cancel is only recorded.
    expect(item.result?.content.text).toBe('The call of "held_change" timed out after 700 ms.');
  });
});

describe("hold versus interrupt over a slow link (finding 2)", () => {
  for (const delay of [30, 150]) {
    it(`books if and only if the model was told it booked, with ${delay} ms each way`, async () => {
      const h = await start();
      await worker(h, { id: "w_1" }, { up: delay, down: delay });
      const toolDelay = 20;
      // Interrupts spread over the window in which the hold crosses the link both ways.
      // The last comes long after the hold was accepted, so both outcomes occur even under load.
      const offsets = [
        ...Array.from({ length: 9 }, (_, i) => Math.round((i * (4 * delay + toolDelay + 60)) / 8)),
        1_500,
      ];
      const told: Array<{
        offset: number;
        booked: boolean;
        outcome: string | undefined;
        code: string | undefined;
      }> = [];
      for (const offset of offsets) {
        const s = await session(h);
        const reply = s.responses.create(`book ${toolDelay}`);
        await eventually(
          () => s.conversation.find((i) => i.type === "tool_call" && i.status === "running"),
          (i) => i !== undefined,
          5_000,
        );
        await new Promise((resolve) => setTimeout(resolve, offset));
        await s.interrupt();
        await reply.catch(() => undefined);
        const item = await eventually(
          () => toolCall(s, "book"),
          (i) => !["pending", "running", "awaiting_approval"].includes(i.status),
          10_000,
        );
        // The worker has had time to book if it was going to.
        await new Promise((resolve) => setTimeout(resolve, 2 * delay + 100));
        const booked =
          h.db.prepare("SELECT call_id FROM bookings WHERE call_id = ?").get(item.id) !== undefined;
        told.push({ offset, booked, outcome: item.result?.outcome, code: item.result?.error?.code });
      }
      for (const trial of told) {
        expect(trial.code, JSON.stringify(trial)).not.toBe("cancel_unconfirmed");
        expect(trial.booked, JSON.stringify(trial)).toBe(trial.outcome === "completed");
      }
      // Both sides of the race were run: some interrupts came first, some holds did.
      expect(told.some((t) => t.booked)).toBe(true);
      expect(told.some((t) => !t.booked)).toBe(true);
    }, 60_000);
  }
});

describe("timeouts (finding 4)", () => {
  it("gives a hosted call 30 s by default and caps a tool's own timeout at the host's ceiling", async () => {
    const h = await start();
    const plain = await worker(h, { id: "w_1" });
    const s = await session(h);
    expect((await s.responses.create("quick")).text).toBe("ok");
    const [quick] = plain.proxy.relayed("down", "hosted.call");
    expect(quick?.timeoutMs).toBeLessThanOrEqual(30_000);
    expect(quick?.timeoutMs).toBeGreaterThan(29_000);
    await plain.worker.kill("SIGKILL");
    await eventually(
      () => h.dispatch.registry.size,
      (n) => n === 0,
    );
    const capped = await worker(h, { id: "w_2", toolTimeoutMs: 800 });
    const started = Date.now();
    expect((await s.responses.create("long")).text).toBe('The call of "long_probe" timed out after 800 ms.');
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(capped.proxy.relayed("down", "hosted.call")[0]?.timeoutMs).toBeLessThanOrEqual(800);
    const row = await eventually(
      () =>
        h.db.prepare("SELECT outcome, elapsed_ms FROM changes").get() as
          | { outcome: string; elapsed_ms: number }
          | undefined,
      (r) => r !== undefined,
    );
    expect(row?.outcome).toBe("aborted");
    expect(row?.elapsed_ms).toBeLessThan(2_000);
  });
});

describe("attempts (finding 5), on workers", () => {
  it("refuses the result of an older attempt once the call went to another worker", async () => {
    const h = await start();
    // Both workers are up before the call: w_1 runs it for 4 s, and w_1's link must be cut within
    // those 4 s for the call to go to w_2. A worker process started after the call began can take
    // longer than that to load on a busy machine (tsx compiles the packages' source: 2 to 5 s at
    // load 10), and then w_1 had answered and the call was settled before w_2 could take it.
    const first = await worker(h, { id: "w_1", slowChangeMs: 4_000 });
    const second = await worker(h, { id: "w_2", slowChangeMs: 5_000 });
    const s = await session(h);
    const reply = s.responses.create("slow");
    // Both idle and never given a call: the registry picks the one connected first.
    await first.worker.waitFor("slow.started");
    // w_1's link fails and stays down until the call went to w_2 as attempt 2 (otherwise a
    // w_1 that reconnected before the server saw its old socket close could be picked again),
    // while w_1 goes on with attempt 1.
    first.proxy.cut({ down: true });
    await second.worker.waitFor("slow.started");
    first.proxy.restore();
    // w_1 reconnects and its attempt-1 result arrives first; only w_2's answer counts.
    await first.worker.waitFor("ready", (e) => e.reconnected === true);
    expect((await reply).text).toBe("changed by w_2 on attempt 2");
    const item = toolCall(s, "slow_change");
    expect(item).toMatchObject({ status: "completed", attempt: 2 });
    const rows = h.db.prepare("SELECT worker, attempt FROM changes ORDER BY worker").all();
    expect(rows).toEqual([
      { worker: "w_1", attempt: 1 },
      { worker: "w_2", attempt: 2 },
    ]);
  }, 30_000);
});
