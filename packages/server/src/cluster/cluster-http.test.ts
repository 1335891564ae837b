import { describe, expect, it } from "vitest";
import { ServerError } from "../errors";
import { silentLogger } from "../observability/logger";
import { ClusterHttp } from "./cluster-http";
import { pingSubject } from "./cluster-node";
import { MemoryBusHub } from "./memory-bus";

// The bus side of HTTP requests passed to a session's owner, on the in-process bus: the answer
// comes back, and each way it cannot names what went wrong (the whole route runs in
// cluster-mode.test.ts, over real processes in packages/e2e/test/cluster-failover.test.ts).
const request = (body: unknown = { commandId: "c_1", text: "hello" }) => ({
  method: "POST",
  path: "/v1/sessions/s_1/messages",
  search: "",
  principal: { kind: "backend" as const },
  body,
});

function pair(answerTimeoutMs = 2_000, probeIntervalMs?: number) {
  const hub = new MemoryBusHub();
  const edgeBus = hub.connect();
  const ownerBus = hub.connect();
  const edge = new ClusterHttp({
    bus: edgeBus,
    nodeId: "n_edge",
    logger: silentLogger,
    answerTimeoutMs,
    ...(probeIntervalMs ? { probeIntervalMs } : {}),
  });
  const owner = new ClusterHttp({ bus: ownerBus, nodeId: "n_owner", logger: silentLogger });
  return { edge, owner, edgeBus, ownerBus };
}

describe("ClusterHttp", () => {
  it("passes a request to the owner and brings back its status and body", async () => {
    const { edge, owner } = pair();
    const seen: unknown[] = [];
    owner.serve(async (forwarded) => {
      seen.push(forwarded);
      return { status: 202, body: { commandId: "c_1", duplicate: false } };
    });
    expect(await edge.forward("n_owner", request(), Date.now() + 10_000)).toEqual({
      status: 202,
      body: { commandId: "c_1", duplicate: false },
    });
    expect(seen).toEqual([request()]);
    // A handler that throws is a 500 to the caller, not a request left hanging.
    owner.serve(async () => {
      throw new Error("boom");
    });
    expect(await edge.forward("n_owner", request(), Date.now())).toMatchObject({
      status: 500,
      body: { error: { code: "internal" } },
    });
    // So is an answer that cannot be serialized.
    owner.serve(async () => ({ status: 200, body: { n: 1n } }));
    expect(await edge.forward("n_owner", request(), Date.now())).toMatchObject({
      status: 500,
      body: { error: { code: "internal" } },
    });
  });

  it("answers 413 when the owner's answer is over what the bus carries at all, rather than timing out", async () => {
    const { edge, ownerBus } = pair();
    // A bus whose answers are refused as too large (NatsBus past 64 MiB).
    const refusing = Object.create(ownerBus) as typeof ownerBus;
    refusing.subscribe = (subject, handler) =>
      ownerBus.subscribe(subject, (message) =>
        handler({
          ...message,
          reply: (data) => {
            if (data.length > 200) throw new ServerError("payload_too_large", "too large for the bus");
            message.reply(data);
          },
        }),
      );
    const owner = new ClusterHttp({ bus: refusing, nodeId: "n_owner", logger: silentLogger });
    owner.serve(async () => ({ status: 200, body: { events: "x".repeat(300) } }));
    expect(await edge.forward("n_owner", request(), Date.now())).toMatchObject({
      status: 413,
      body: {
        error: { code: "payload_too_large", message: expect.stringMatching(/too large to pass between/) },
      },
    });
  });

  it("answers `unavailable` at once, with the lease's time left, when the owner's process is gone", async () => {
    const { edge } = pair(5_000);
    const asked = Date.now();
    const error = await edge.forward("n_owner", request(), Date.now() + 1_200).catch((e: unknown) => e);
    expect(Date.now() - asked).toBeLessThan(1_000);
    expect(error).toMatchObject({
      code: "unavailable",
      path: "sessionId",
      message: expect.stringMatching(/session s_1 \(n_owner\) is gone; .*\(in about \d+ ms/),
      retryAfterMs: expect.any(Number),
    });
    expect((error as { retryAfterMs: number }).retryAfterMs).toBeGreaterThan(500);
  });

  it("answers `unavailable` naming the bound when a live owner does not answer in time", async () => {
    const { edge, ownerBus } = pair(300, 50);
    // Alive (its node answers pings all along) but slow: the wait runs to the bound.
    let pings = 0;
    ownerBus.subscribe(pingSubject("n_owner"), (message) => {
      pings += 1;
      message.reply("");
    });
    ownerBus.subscribe("patchbay.node.n_owner.http", () => {});
    await expect(edge.forward("n_owner", request(), Date.now() + 10_000)).rejects.toMatchObject({
      code: "unavailable",
      message: expect.stringMatching(/did not answer within 300 ms; retry \(with the same commandId/),
    });
    expect(pings).toBeGreaterThanOrEqual(1);
  });

  it("ends the wait as soon as an owner that took the request leaves the bus (a crash NATS had not noticed yet)", async () => {
    const { edge, ownerBus } = pair(5_000, 50);
    const stops = [
      ownerBus.subscribe(pingSubject("n_owner"), (message) => message.reply("")),
      // The request is delivered, but the process dies before it answers.
      ownerBus.subscribe("patchbay.node.n_owner.http", () => {
        setTimeout(() => {
          for (const stop of stops) stop();
        }, 120);
      }),
    ];
    const asked = Date.now();
    const error = await edge.forward("n_owner", request(), Date.now() + 1_200).catch((e: unknown) => e);
    const waited = Date.now() - asked;
    expect(waited).toBeGreaterThanOrEqual(120);
    expect(waited).toBeLessThan(2_000);
    expect(error).toMatchObject({
      code: "unavailable",
      path: "sessionId",
      message: expect.stringMatching(/session s_1 \(n_owner\) is gone; /),
    });
  });

  it("asks nothing more of the owner once its answer came", async () => {
    const { edge, owner, ownerBus } = pair(5_000, 20);
    let pings = 0;
    ownerBus.subscribe(pingSubject("n_owner"), (message) => {
      pings += 1;
      message.reply("");
    });
    owner.serve(async () => {
      await new Promise((r) => setTimeout(r, 70));
      return { status: 200, body: {} };
    });
    expect(await edge.forward("n_owner", request(), Date.now())).toEqual({ status: 200, body: {} });
    const after = pings;
    expect(after).toBeGreaterThanOrEqual(1);
    await new Promise((r) => setTimeout(r, 100));
    expect(pings).toBe(after);
  });

  it("refuses any request while this node's bus is down", async () => {
    const { edge, edgeBus } = pair();
    edgeBus.disconnect();
    await expect(edge.forward("n_owner", request(), 0)).rejects.toMatchObject({
      code: "unavailable",
      message: expect.stringMatching(/lost its connection to the cluster's bus/),
    });
  });
});
