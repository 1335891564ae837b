import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createUserToken } from "@patchbay/server";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { startTestNats, type TestNats } from "../../server/src/testing/nats-server";
import { startTestPostgres, type TestPostgres } from "../../server/src/testing/postgres-server";
import { DelayProxy } from "../fixtures/delay-proxy";
import {
  API_KEY,
  SECRET as DISPATCH_SECRET,
  openWorkerDb,
  WorkerProcess,
} from "../fixtures/dispatch-harness";
import { type CliServer, clusterNodeEnv, runCli, startCli } from "./helpers/cli-process";
import { RawClient } from "./helpers/raw-client";

// Three `patchbay serve --nats-url` processes on one real PostgreSQL and one real nats-server
// (both started by the test on 127.0.0.1): the owner of a session is killed with SIGKILL
// mid-turn, over and over, and the session must answer again on another node within the lease
// bound, with no accepted message or event lost or doubled (docs/cluster.md). A second client on
// another node is served by the owner across the bus meanwhile, and resumes after the kill.
const LEASE_TTL_MS = 1_500;
// A dead owner's sessions answer again within the TTL plus a third (docs/cluster.md, "Takeover
// bound"): its lease expires at most a TTL after the kill, and then the sweep of a live node
// (every third of the TTL) or a client's attach takes it over.
const TAKEOVER_BOUND_MS = LEASE_TTL_MS + LEASE_TTL_MS / 3;
// What the test measures also holds the new owner's loading and recovering of the session, the
// client's retries (every 50 ms) and its reading of the turn's end: tens of ms on a quiet machine,
// a few hundred while the whole suite loads both cores (one run measured 2,177 ms at load 11).
const HANDLING_SLACK_MS = 1_000;
// At least 20 in CI (#19's done-when); fewer only by hand, while working on this file.
// How long one step may wait for its frame: the whole suite runs many files at once on a small
// machine. The takeover figures are measured, not these waits.
const WAIT_MS = 15_000;
const TRIALS = Math.max(1, Number(process.env.PATCHBAY_CLUSTER_TRIALS ?? 20));
const HOSTED_TRIALS = Math.max(1, Number(process.env.PATCHBAY_CLUSTER_HOSTED_TRIALS ?? 20));

let pg: TestPostgres;
let nats: TestNats;
let root: string;
beforeAll(async () => {
  [pg, nats] = await Promise.all([startTestPostgres(), startTestNats()]);
  root = mkdtempSync(join(tmpdir(), "patchbay-cluster-"));
  mkdirSync(join(root, "config", "agents"), { recursive: true });
  writeFileSync(join(root, "config", "agents", "support.yaml"), AGENT);
  writeFileSync(join(root, "config", "agents", "desk.yaml"), DESK);
}, 60_000);
afterAll(async () => {
  for (const node of nodes)
    if (node && node.child.exitCode === null && node.child.signalCode === null) node.child.kill("SIGKILL");
  await Promise.all(nodes.map((node) => node?.exited));
  await nats?.stop();
  await pg?.stop();
  if (root) rmSync(root, { recursive: true, force: true });
});

const AGENT = `name: Support
instructions: You help with orders.
model:
  provider: scripted
  rules:
    - match: "where am i"
      toolCalls:
        - tool: locate
      reply: "You are in {result}."
    - match: hello
      reply: Hello from the cluster.
    - match: 'pay (?<amount>\\d+)'
      toolCalls:
        - tool: record_payment
          arguments:
            amount: "{amount:integer}"
      reply: "Done: {results.record_payment}"
      errorReply: "Payment failed: {result}"
`;
// A user's messages go to a dispatch worker first (here: one connected to another node).
const DESK = `name: Desk
instructions: You answer what the desk passes on.
dispatch:
  text: enabled
model:
  provider: scripted
  rules:
    - match: hello
      reply: The desk passed it on.
`;
// The worker processes of the dispatch harness log in with its key and secret.
const SECRET = DISPATCH_SECRET;
const locate = { name: "locate", description: "Where", parameters: { type: "object", properties: {} } };

const nodes: CliServer[] = [];
function env(): Record<string, string> {
  const shared = { databaseUrl: pg.url, natsUrl: nats.url, leaseTtlMs: LEASE_TTL_MS };
  return clusterNodeEnv({ root, apiKey: API_KEY, secret: SECRET, ...shared });
}

async function readyz(node: CliServer): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${node.url}/readyz`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/**
 * Resumes the session on `wsUrl`, retrying on the same socket every 50 ms while its dead owner's
 * lease has not been taken over yet (a relayed resume to the dead owner is refused at once).
 */
async function resumeWhenTakenOver(wsUrl: string, token: string, sessionId: string, deadlineMs: number) {
  const client = await RawClient.open(wsUrl, { kind: "user", token });
  let refused = 0;
  while (Date.now() < deadlineMs) {
    const requestId = `r_${refused}`;
    client.send({ type: "session.resume", requestId, sessionId, afterSeq: 0, tools: [locate] });
    const reply = await client.next(
      (f) =>
        (f.type === "session.opened" || f.type === "error") && "requestId" in f && f.requestId === requestId,
    );
    if (reply.type === "session.opened") return { client, refused };
    expect(reply).toMatchObject({ type: "error", code: "unavailable" });
    refused += 1;
    await new Promise((r) => setTimeout(r, 50));
  }
  await client.close();
  throw new Error(`session ${sessionId} was not taken over in time`);
}

/** The SQLite file the worker processes record their work and side effects in. */
const workerDb = () => openWorkerDb(root);

describe("a cluster of three patchbay serve processes (Postgres + NATS)", () => {
  // A test that failed between killing a node and starting it again leaves the next test its
  // three nodes all the same: its own failure is the one reported, not a refused connection.
  beforeEach(async () => {
    for (const [i, node] of nodes.entries())
      if (node.child.exitCode !== null || node.child.signalCode !== null) {
        await node.exited;
        nodes[i] = await startCli(["serve"], env());
      }
  }, 60_000);

  it("starts three nodes on one database (no store lock), each ready and seeing the others", async () => {
    for (let i = 0; i < 3; i++) nodes.push(await startCli(["serve"], env()));
    const deadline = Date.now() + 30_000;
    let bodies: Record<string, unknown>[] = [];
    while (Date.now() < deadline) {
      const answers = await Promise.all(nodes.map(readyz));
      bodies = answers.map((a) => a.body);
      const seesAll = answers.every(
        (a) => a.status === 200 && ((a.body.cluster as { peers: string[] }).peers?.length ?? 0) === 2,
      );
      if (seesAll) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const ids = bodies.map((b) => (b.cluster as { node: string }).node);
    expect(new Set(ids).size).toBe(3);
    for (const body of bodies) {
      expect(body).toMatchObject({ status: "ready", cluster: { bus: "connected", database: "up" } });
      expect((body.cluster as { peers: string[] }).peers.sort()).toEqual(
        ids.filter((id) => id !== (body.cluster as { node: string }).node).sort(),
      );
    }
  }, 30_000);

  it("refuses a cluster without Postgres, naming the option", async () => {
    const { PATCHBAY_DATABASE_URL: _, ...rest } = env();
    const result = await runCli(["serve"], rest);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(
      /cluster mode .* needs a store that keeps session leases: give databaseUrl/,
    );
  });

  it(`kill -9 of a session's owner mid-turn, ${TRIALS} times: the session answers on another node within the lease bound, nothing lost or doubled, relayed clients included`, async () => {
    expect(nodes.length).toBe(3);
    const token = await createUserToken(SECRET, "u_cluster");
    const takeovers: number[] = [];
    let relayedTurns = 0;
    for (let trial = 0; trial < TRIALS; trial++) {
      const ownerIndex = trial % 3;
      const owner = nodes[ownerIndex]!;
      const other = nodes[(ownerIndex + 1) % 3]!;
      const page = await RawClient.open(owner.wsUrl, { kind: "user", token });
      const sessionId = await page.create("support", { tools: [locate] });
      page.send({ type: "message.send", sessionId, commandId: "c_1", text: "hello" });
      expect(await page.turnEnd("c_1", WAIT_MS)).toMatchObject({ type: "response.completed" });
      // While its owner lives, a client on another node is served by the owner across the bus.
      const relayed = await RawClient.open(other.wsUrl, { kind: "user", token });
      relayed.send({ type: "session.resume", requestId: "x", sessionId, afterSeq: 0 });
      expect(
        await relayed.next((f) => f.type === "error" || f.type === "session.opened", WAIT_MS),
      ).toMatchObject({
        type: "session.opened",
        session: { id: sessionId },
      });
      relayed.send({ type: "message.send", sessionId, commandId: "c_r", text: "hello" });
      expect(await relayed.turnEnd("c_r", WAIT_MS)).toMatchObject({
        type: "response.completed",
        text: "Hello from the cluster.",
      });
      expect((await page.turnEnd("c_r", WAIT_MS)).type).toBe("response.completed");
      relayedTurns += 1;
      // Mid-turn: the model called the page's tool and waits for its result.
      page.send({ type: "message.send", sessionId, commandId: "c_2", text: "where am i" });
      await page.nextOf("tool.call", WAIT_MS);
      const seenBefore = page.events(sessionId);
      // The relayed client saw the same events, in the same order, as the owner's own client.
      await relayed.next(
        (f) => f.type === "message.created" && f.sessionId === sessionId && f.item.text === "where am i",
        WAIT_MS,
      );
      const relayedBefore = relayed.events(sessionId);
      expect(relayedBefore).toEqual(seenBefore.slice(0, relayedBefore.length));
      owner.child.kill("SIGKILL");
      const killedAt = Date.now();
      await owner.exited;
      await page.whenClosed();

      const { client: again } = await resumeWhenTakenOver(other.wsUrl, token, sessionId, killedAt + 15_000);
      const failed = await again.turnEnd("c_2", WAIT_MS);
      takeovers.push(Date.now() - killedAt);
      expect(failed).toMatchObject({ type: "response.failed", error: { code: "server_restart" } });
      // Every event the dead owner sent comes back with the same seq and body; none doubled.
      const replayed = again.events(sessionId);
      expect(replayed.slice(0, seenBefore.length)).toEqual(seenBefore);
      expect(replayed.map((e) => e.seq)).toEqual(replayed.map((_, i) => i + 1));
      // The accepted message is in the conversation; a retried send of c_1 runs nothing twice.
      again.send({ type: "message.send", sessionId, commandId: "c_1", text: "hello" });
      again.send({ type: "message.send", sessionId, commandId: "c_3", text: "hello" });
      const end = await again.turnEnd("c_3", WAIT_MS);
      expect(end.type === "response.completed" && end.text).toBe("Hello from the cluster.");
      const res = await fetch(`${other.url}/v1/sessions/${sessionId}`, {
        headers: { authorization: `Bearer ${token}` },
      });
      const body = (await res.json()) as { conversation: { type: string; status: string; text?: string }[] };
      expect(body.conversation.map((item) => `${item.type}:${item.status}`)).toEqual([
        "message:completed",
        "message:completed",
        "message:completed",
        "message:completed",
        "message:completed",
        "tool_call:failed",
        "message:completed",
        "message:completed",
      ]);
      expect(body.conversation[4]?.text).toBe("where am i");
      await again.close();
      // The relayed client reconnects too and resumes after the last event it had: the log goes on
      // from there with nothing lost or doubled.
      await relayed.close();
      const third = nodes[(ownerIndex + 2) % 3]!;
      const back = await RawClient.open(third.wsUrl, { kind: "user", token });
      const lastSeen = relayedBefore.at(-1)!.seq;
      back.send({ type: "session.resume", requestId: "b", sessionId, afterSeq: lastSeen });
      await back.next((f) => f.type === "session.opened" || f.type === "error", WAIT_MS);
      await back.turnEnd("c_3", WAIT_MS);
      const stitched = [...relayedBefore, ...back.events(sessionId)];
      expect(stitched.map((e) => e.seq)).toEqual(stitched.map((_, i) => i + 1));
      expect(stitched).toEqual(again.events(sessionId).slice(0, stitched.length));
      await back.close();
      // The killed node comes back (a new process, a new node id) for the next trial.
      nodes[ownerIndex] = await startCli(["serve"], env());
    }
    takeovers.sort((a, b) => a - b);
    const median = takeovers[Math.floor(takeovers.length / 2)]!;
    console.log(
      `cluster failover: ${TRIALS} kill -9 trials mid-turn, lease TTL ${LEASE_TTL_MS} ms, bound ${TAKEOVER_BOUND_MS} ms (+${HANDLING_SLACK_MS} ms handling); ` +
        `answering again after min ${takeovers[0]} ms, median ${median} ms, max ${takeovers.at(-1)} ms; ` +
        `${relayedTurns} turns answered to a client on another node than the owner (relayed over NATS)`,
    );
    // The stated bound (docs/cluster.md): the lease outlives the kill by at most the TTL, and a
    // relayed resume to the dead owner is refused at once, so the client's retry takes it over.
    expect(takeovers.at(-1)!).toBeLessThanOrEqual(TAKEOVER_BOUND_MS + HANDLING_SLACK_MS);
  }, 240_000);

  it("serves hosted calls of sessions two nodes own with a worker connected to the third, each side effect once", async () => {
    const { dbPath, db } = workerDb();
    const worker = new WorkerProcess({ id: "w_c", db: dbPath, capacity: 4, hostTools: true }, nodes[2]!.url);
    try {
      await worker.waitFor("ready", (e) => e.reconnected === false);
      // The other nodes learn of the worker's tools from its node's next heartbeats (every 2 s).
      await new Promise((r) => setTimeout(r, 4_500));
      const token = await createUserToken(SECRET, "u_pay");
      const answers: string[] = [];
      for (let i = 0; i < 6; i++) {
        const page = await RawClient.open(nodes[i % 2]!.wsUrl, { kind: "user", token });
        const sessionId = await page.create("support");
        page.send({ type: "message.send", sessionId, commandId: "c_pay", text: `pay ${10 + i}` });
        const end = await page.turnEnd("c_pay", WAIT_MS);
        answers.push(end.type === "response.completed" ? end.text : JSON.stringify(end));
        await page.close();
      }
      expect(answers).toEqual(
        [10, 11, 12, 13, 14, 15].map((n) => `Done: payment of ${n} recorded by w_c, answered by w_c`),
      );
      const effects = db.prepare("SELECT call_id, amount FROM effects ORDER BY amount").all() as {
        amount: number;
      }[];
      expect(effects.map((e) => e.amount)).toEqual([10, 11, 12, 13, 14, 15]);
      const deliveries = db
        .prepare("SELECT call_id, COUNT(*) AS n FROM deliveries GROUP BY call_id")
        .all() as { n: number }[];
      expect(deliveries.map((d) => d.n)).toEqual([1, 1, 1, 1, 1, 1]);
      // Each owner's first call opened a direct link to the worker's node; the calls after it went on it.
      const metrics = await (await fetch(`${nodes[2]!.url}/metrics`)).text();
      const links = Number(/^patchbay_cluster_direct_links (\d+)$/m.exec(metrics)?.[1]);
      expect(links).toBeGreaterThanOrEqual(2);
    } finally {
      await worker.kill("SIGKILL");
      db.close();
    }
  }, 60_000);

  it("sends a user's message of a session one node owns, and an incoming call posted to another node, to a worker connected to a third node", async () => {
    const { dbPath, db } = workerDb();
    const worker = new WorkerProcess(
      { id: "w_desk", db: dbPath, capacity: 2, messages: true, calls: true },
      nodes[2]!.url,
    );
    try {
      await worker.waitFor("ready", (e) => e.reconnected === false);
      // The owner learns of the worker's free slots from its node's next heartbeats (every 2 s).
      await new Promise((r) => setTimeout(r, 4_500));
      const token = await createUserToken(SECRET, "u_desk");
      const page = await RawClient.open(nodes[0]!.wsUrl, { kind: "user", token });
      const sessionId = await page.create("desk");
      page.send({ type: "message.send", sessionId, commandId: "c_desk", text: "hello" });
      expect(await page.turnEnd("c_desk", WAIT_MS)).toMatchObject({
        type: "response.completed",
        text: "The desk passed it on.",
      });
      expect(page.events(sessionId).some((e) => e.type === "response.thinking")).toBe(true);
      const work = db.prepare("SELECT worker, kind, text FROM work WHERE worker = 'w_desk'").all();
      expect(work).toEqual([{ worker: "w_desk", kind: "message", text: "hello" }]);
      // The worker replies in its own words: `dispatch.reply` posts to its own node (the third),
      // which passes the request to the session's owner (the first).
      page.send({ type: "message.send", sessionId, commandId: "c_reply", text: "reply: On my way." });
      expect(await page.turnEnd("c_reply", WAIT_MS)).toMatchObject({
        type: "response.completed",
        reason: "answered_by_worker",
        text: "On my way.",
      });
      expect((await worker.waitFor("replied")).duplicate).toBe(false);
      // A backend's message posted to the second node is served by the owner as well.
      const backend = {
        "x-api-key": API_KEY,
        authorization: `Bearer ${SECRET}`,
        "content-type": "application/json",
      };
      const posted = await fetch(`${nodes[1]!.url}/v1/sessions/${sessionId}/messages`, {
        method: "POST",
        headers: backend,
        body: JSON.stringify({ commandId: "c_http", text: "hello" }),
      });
      expect({ status: posted.status, body: await posted.json() }).toEqual({
        status: 202,
        body: { commandId: "c_http", duplicate: false },
      });
      expect(await page.turnEnd("c_http", WAIT_MS)).toMatchObject({ type: "response.completed" });
      await page.close();
      // An incoming call posted to a node without workers goes to the one with free slots.
      const res = await fetch(`${nodes[1]!.url}/v1/agents/support/inbound/calls`, {
        method: "POST",
        headers: {
          "x-api-key": API_KEY,
          authorization: `Bearer ${SECRET}`,
          "content-type": "application/json",
        },
        body: JSON.stringify({ from: "+15550001", to: "+15550002" }),
      });
      expect(res.status).toBe(202);
      const receipt = (await res.json()) as { status: string; workId: string };
      expect(receipt.status).toBe("offered");
      await worker.waitFor("work.finished", (e) => e.workId === receipt.workId);
      const calls = db.prepare("SELECT worker, text FROM work WHERE kind = 'call'").all();
      expect(calls).toEqual([{ worker: "w_desk", text: "+15550001->+15550002" }]);
    } finally {
      await worker.kill("SIGKILL");
      db.close();
    }
  }, 60_000);

  it("kill -9 of the node routed messages' worker is connected to: the worker reconnects to another node, and each message is joined there (one run, its answer counts), the one it still runs and the one it finished while cut off", async () => {
    const { dbPath, db } = workerDb();
    // A load balancer in front of the worker: the third node, then (once it died) the second.
    const balancer = await DelayProxy.start(nodes[2]!.url, { up: 0, down: 0 });
    const worker = new WorkerProcess(
      { id: "w_moved", db: dbPath, capacity: 4, messages: true },
      balancer.url,
    );
    try {
      await worker.waitFor("ready", (e) => e.reconnected === false);
      // The owner learns of the worker's free slots from its node's next heartbeats (every 2 s).
      await new Promise((r) => setTimeout(r, 4_500));
      const token = await createUserToken(SECRET, "u_moved");
      const page = await RawClient.open(nodes[0]!.wsUrl, { kind: "user", token });
      const short = await page.create("desk");
      const long = await page.create("desk");
      page.send({ type: "message.send", sessionId: short, commandId: "c_short", text: "hello, hold 1000" });
      page.send({ type: "message.send", sessionId: long, commandId: "c_long", text: "hello, hold 4000" });
      for (const text of ["hello, hold 1000", "hello, hold 4000"])
        await worker.waitFor(
          "work.started",
          (e) =>
            db.prepare("SELECT 1 FROM work WHERE work_id = ? AND text = ?").get(e.workId, text) !== undefined,
          WAIT_MS,
        );
      // The worker cannot get back in until the short message finished (its answer and work.done
      // wait in its outbox); then it reconnects, to the second node, still running the long one.
      balancer.cut({ down: true });
      nodes[2]!.child.kill("SIGKILL");
      const killedAt = Date.now();
      await nodes[2]!.exited;
      await worker.waitFor("work.finished", () => true, WAIT_MS);
      balancer.target = nodes[1]!.url;
      balancer.restore();
      await worker.waitFor("ready", (e) => e.reconnected === true, WAIT_MS);
      for (const [sessionId, commandId] of [
        [short, "c_short"],
        [long, "c_long"],
      ] as const) {
        expect(await page.turnEnd(commandId, WAIT_MS)).toMatchObject({
          type: "response.completed",
          text: "The desk passed it on.",
        });
        expect(page.events(sessionId).filter((e) => e.type === "response.completed")).toHaveLength(1);
      }
      const answeredAfter = Date.now() - killedAt;
      // Once each: the worker ran each message one time, under the id the owner gave it, and was
      // never offered either again (the second node joined what it had).
      const runs = db
        .prepare("SELECT text, worker, attempt FROM work WHERE worker = 'w_moved' ORDER BY text")
        .all();
      expect(runs).toEqual([
        { text: "hello, hold 1000", worker: "w_moved", attempt: 1 },
        { text: "hello, hold 4000", worker: "w_moved", attempt: 1 },
      ]);
      expect(worker.events.filter((e) => e.event === "work.started")).toHaveLength(2);
      console.log(
        `cluster reroute: two routed messages whose worker's node was killed were joined on the node the worker reconnected to; both turns completed ${answeredAfter} ms after the kill (the worker held them 1000 and 4000 ms)`,
      );
      await page.close();
    } finally {
      await worker.kill("SIGKILL");
      await balancer.close();
      db.close();
      nodes[2] = await startCli(["serve"], env());
    }
  }, 60_000);

  it("answers HTTP requests about a killed owner's session with 503 and retry-after at once, then serves them on another node within the lease bound", async () => {
    const token = await createUserToken(SECRET, "u_http_kill");
    const user = { authorization: `Bearer ${token}`, "content-type": "application/json" };
    const owner = nodes[0]!;
    const other = nodes[1]!;
    // A client attached on the owner holds the session (and its lease) there.
    const page = await RawClient.open(owner.wsUrl, { kind: "user", token });
    const sessionId = await page.create("support");
    const send = () =>
      fetch(`${other.url}/v1/sessions/${sessionId}/messages`, {
        method: "POST",
        headers: user,
        body: JSON.stringify({ commandId: "c_after", text: "hello" }),
      });
    owner.child.kill("SIGKILL");
    const killedAt = Date.now();
    await owner.exited;
    await page.whenClosed();
    const first = await send();
    // The owner's process is gone: NATS has no responder for it, so no request waits for a timeout.
    expect(first.status).toBe(503);
    expect(Number(first.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(await first.json()).toMatchObject({
      error: { code: "unavailable", path: "sessionId", message: expect.stringMatching(/ is gone; /) },
    });
    let refused = 1;
    let accepted: Response | undefined;
    while (Date.now() < killedAt + 15_000) {
      const res = await send();
      if (res.status === 202) {
        accepted = res;
        break;
      }
      expect(res.status).toBe(503);
      await res.body?.cancel();
      refused += 1;
      await new Promise((r) => setTimeout(r, 50));
    }
    const answeredAfter = Date.now() - killedAt;
    expect(accepted?.status).toBe(202);
    console.log(
      `cluster HTTP failover: a message posted to another node answered 202 ${answeredAfter} ms after the owner's kill (${refused} 503s before; bound ${TAKEOVER_BOUND_MS} ms +${HANDLING_SLACK_MS} ms handling)`,
    );
    expect(answeredAfter).toBeLessThanOrEqual(TAKEOVER_BOUND_MS + HANDLING_SLACK_MS);
    // The message runs where the session was taken over; its turn completes.
    let events: { type: string; commandId?: string }[] = [];
    for (let i = 0; i < 300 && !events.some((e) => e.type === "response.completed"); i++) {
      const res = await fetch(`${other.url}/v1/sessions/${sessionId}/events?after=0`, { headers: user });
      events = ((await res.json()) as { events: typeof events }).events;
      if (!events.some((e) => e.type === "response.completed")) await new Promise((r) => setTimeout(r, 50));
    }
    expect(events.filter((e) => e.type === "response.completed").map((e) => e.commandId)).toEqual([
      "c_after",
    ]);
    nodes[0] = await startCli(["serve"], env());
  }, 60_000);

  it(
    `kill -9 of a session's owner mid-hosted-call (worker on another node), ${HOSTED_TRIALS} times: the call is delivered again to the node taking over and finishes once, and the model answers with its result`,
    async () => {
      const { dbPath, db } = workerDb();
      const worker = new WorkerProcess(
        { id: "w_slow", db: dbPath, capacity: 4, hostTools: true, toolDelayMs: 1_500 },
        nodes[2]!.url,
      );
      const token = await createUserToken(SECRET, "u_pay_kill");
      const takeovers: number[] = [];
      const finished: number[] = [];
      try {
        await worker.waitFor("ready", (e) => e.reconnected === false);
        await new Promise((r) => setTimeout(r, 4_500));
        for (let trial = 0; trial < HOSTED_TRIALS; trial++) {
          const ownerIndex = trial % 2;
          const owner = nodes[ownerIndex]!;
          const amount = 100 + trial;
          const page = await RawClient.open(owner.wsUrl, { kind: "user", token });
          const sessionId = await page.create("support");
          page.send({ type: "message.send", sessionId, commandId: "c_pay", text: `pay ${amount}` });
          const call = await page.next(
            (f) => f.type === "conversation.updated" && f.item.type === "tool_call",
            WAIT_MS,
          );
          const callId = call.type === "conversation.updated" ? call.item.id : "";
          // The worker on node C ran the side effect and is still working when the owner dies.
          await worker.waitFor("effect", (e) => e.callId === callId);
          const seenBefore = page.events(sessionId);
          owner.child.kill("SIGKILL");
          const killedAt = Date.now();
          await owner.exited;
          const { client: again } = await resumeWhenTakenOver(
            nodes[2]!.wsUrl,
            token,
            sessionId,
            killedAt + 15_000,
          );
          takeovers.push(Date.now() - killedAt);
          // The turn goes on where the owner died: the call, delivered again with its id, finishes
          // once, and the model answers with its result.
          expect(await again.turnEnd("c_pay", WAIT_MS)).toMatchObject({
            type: "response.completed",
            text: `Done: payment of ${amount} recorded by w_slow, answered by w_slow`,
          });
          finished.push(Date.now() - killedAt);
          const replayed = again.events(sessionId);
          expect(replayed.slice(0, seenBefore.length)).toEqual(seenBefore);
          expect(replayed.map((e) => e.seq)).toEqual(replayed.map((_, i) => i + 1));
          expect(replayed.filter((e) => e.type === "response.started")).toHaveLength(1);
          // Once, however the owner died: the worker keys it on the call id.
          expect(db.prepare("SELECT COUNT(*) AS n FROM effects WHERE amount = ?").get(amount)).toEqual({
            n: 1,
          });
          expect(db.prepare("SELECT COUNT(*) AS n FROM deliveries WHERE call_id = ?").get(callId)).toEqual({
            n: 1,
          });
          const res = await fetch(`${nodes[2]!.url}/v1/sessions/${sessionId}`, {
            headers: { authorization: `Bearer ${token}` },
          });
          const body = (await res.json()) as {
            conversation: { type: string; status: string; id: string; result?: { outcome: string } }[];
          };
          expect(body.conversation.map((item) => `${item.type}:${item.status}`)).toEqual([
            "message:completed",
            "tool_call:completed",
            "message:completed",
          ]);
          expect(body.conversation[1]).toMatchObject({ id: callId, result: { outcome: "completed" } });
          // And the session answers again, with the worker on the surviving node.
          again.send({ type: "message.send", sessionId, commandId: "c_next", text: `pay ${amount + 50}` });
          expect(await again.turnEnd("c_next", WAIT_MS)).toMatchObject({
            type: "response.completed",
            text: `Done: payment of ${amount + 50} recorded by w_slow, answered by w_slow`,
          });
          await again.close();
          await page.close();
          nodes[ownerIndex] = await startCli(["serve"], env());
        }
        const sorted = (list: number[]) => [...list].sort((a, b) => a - b);
        const line = (list: number[]) => {
          const s = sorted(list);
          return `min ${s[0]} ms, median ${s[Math.floor(s.length / 2)]} ms, max ${s.at(-1)} ms`;
        };
        console.log(
          `cluster failover mid-hosted-call: ${HOSTED_TRIALS} kill -9 trials, each call delivered again and finished once; ` +
            `answering again after ${line(takeovers)} (bound ${TAKEOVER_BOUND_MS} ms +${HANDLING_SLACK_MS} ms handling); the cut-off turn completed after ${line(finished)}`,
        );
        expect(sorted(takeovers).at(-1)!).toBeLessThanOrEqual(TAKEOVER_BOUND_MS + HANDLING_SLACK_MS);
      } finally {
        await worker.kill("SIGKILL");
        db.close();
      }
    },
    60_000 + HOSTED_TRIALS * 15_000,
  );
});
