// Scenarios of the worker's connection and its work: hello and ready, credentials, heartbeats and
// silence, redelivery after a dropped socket and after kill -9, work offered to answered, drain.
import assert from "node:assert/strict";
import { DESK_AGENT, HEARTBEAT_MS, TOOLS_AGENT } from "./kit-server";
import type { Scenario } from "./scenario";
import { endedCall, say, sleep } from "./scenario";
import type { Frame } from "./worker-proxy";

/** The tools the worker under test must host for agent `conformance` (see the README). */
export const REQUIRED_TOOLS = [
  "echo",
  "describe_call",
  "report",
  "wait",
  "hold_then_wait",
  "sleepy",
  "fail",
  "image",
];

interface HostedSpec {
  agent: string;
  tools: Array<{ name: string; parameters: { type: string }; interruptible?: boolean; timeoutMs?: number }>;
}

export const connectionScenarios: Scenario[] = [
  {
    name: "hello and ready",
    async run(world) {
      const { connection } = await world.startReadyWorker({ workerId: "conf-hello", capacity: 3 });
      const conn = world.proxy.connections[connection]!;
      const hello = conn.hello!;
      assert.equal(hello.protocol, 1);
      assert.equal(hello.workerId, "conf-hello", "workerId comes from PATCHBAY_WORKER_ID");
      assert.equal(hello.capacity, 3, "capacity comes from PATCHBAY_CAPACITY");
      assert.deepEqual(hello.handles, { messages: true, calls: true });
      const hosted = (hello.hosts as HostedSpec[]).find((h) => h.agent === TOOLS_AGENT);
      assert.ok(hosted, `the worker hosts agent ${TOOLS_AGENT}`);
      const names = hosted.tools.map((t) => t.name).sort();
      for (const tool of REQUIRED_TOOLS) assert.ok(names.includes(tool), `the worker hosts ${tool}`);
      const byName = new Map(hosted.tools.map((t) => [t.name, t]));
      assert.equal(byName.get("wait")?.interruptible, true, "wait is interruptible");
      assert.equal(byName.get("sleepy")?.timeoutMs, 1_000, "sleepy's spec sets timeoutMs 1000");
      const echo = byName.get("echo") as { parameters: { required?: string[] } } | undefined;
      assert.deepEqual(echo?.parameters.required, ["text"], "echo requires text");
      const ready = await conn.nextToWorker("worker.ready");
      assert.equal(ready.heartbeatIntervalMs, HEARTBEAT_MS);
    },
  },
  {
    name: "bad credentials",
    async run(world) {
      const worker = world.startWorker({ workerId: "conf-bad", secret: "not-the-secret" });
      const code = await worker.exitCode(10_000);
      assert.notEqual(code, 0, `a refused worker exits with an error; output: ${worker.output.slice(-500)}`);
      const conn = await world.proxy.connection(0);
      const error = await conn.nextToWorker("error");
      assert.equal(error.code, "unauthorized");
      assert.equal(world.proxy.connections.length, 1, "a refused worker does not retry");
    },
  },
  {
    name: "heartbeats",
    async run(world) {
      const { connection } = await world.startReadyWorker({ workerId: "conf-hb" });
      const conn = world.proxy.connections[connection]!;
      conn.interceptedNonces.add("conf-nonce-1");
      conn.inject({ type: "ping", nonce: "conf-nonce-1" });
      const pong = await conn.next("pong", (f) => f.nonce === "conf-nonce-1", 2_000);
      assert.equal(pong.nonce, "conf-nonce-1");
      // The server pings every interval; the worker answers each.
      await sleep(HEARTBEAT_MS * 3);
      const pings = conn.toWorker.filter((f) => f.type === "ping");
      assert.ok(pings.length >= 2, `the server pinged ${pings.length} times`);
      assert.ok(
        pings.every((p) => typeof p.nonce === "string"),
        "server pings carry a nonce",
      );
      for (const ping of pings.slice(0, -1)) {
        await conn.next("pong", (f) => f.nonce === ping.nonce, 1_000);
      }
    },
  },
  {
    name: "silence",
    async run(world) {
      const { connection } = await world.startReadyWorker({ workerId: "conf-silent" });
      const conn = world.proxy.connections[connection]!;
      conn.silent = true;
      const started = Date.now();
      // Nothing arrives any more: within two intervals (plus a little) the worker gives up on the
      // socket and connects again.
      const again = await world.proxy.connection(connection + 1, HEARTBEAT_MS * 2 + 4_000);
      assert.equal(again.hello?.workerId, "conf-silent", "it reconnects with the same workerId");
      assert.ok(Date.now() - started >= HEARTBEAT_MS, "not before the silence lasted an interval");
    },
  },
  {
    name: "redelivery after a dropped socket",
    async run(world) {
      const { connection } = await world.startReadyWorker({ workerId: "conf-drop" });
      const conn = world.proxy.connections[connection]!;
      const session = await world.session();
      say(session, "wait 1500");
      const call = await conn.nextToWorker("hosted.call");
      conn.drop();
      const again = await world.proxy.connection(connection + 1, 8_000);
      const running = again.hello?.running as { calls: string[] } | undefined;
      assert.deepEqual(running?.calls, [call.callId], "the new hello lists the call still running");
      const item = await endedCall(session, "wait", 10_000);
      assert.equal(item.status, "completed", JSON.stringify(item.result));
      assert.match(item.result!.content.text, /runs=1$/, "the call ran once in the worker");
    },
  },
  {
    name: "kill -9 and redelivery to a second instance",
    async run(world) {
      const first = await world.startReadyWorker({ workerId: "conf-a" });
      const second = await world.startReadyWorker({ workerId: "conf-b" });
      const session = await world.session();
      say(session, "wait 800");
      const taker = await world.proxy.receiverOf(() => true);
      const [killed, other] = taker.index === first.connection ? [first, "conf-b"] : [second, "conf-a"];
      killed.worker.signal("SIGKILL");
      const item = await endedCall(session, "wait", 15_000);
      assert.equal(item.status, "completed", JSON.stringify(item.result));
      assert.match(
        item.result!.content.text,
        new RegExp(`on ${other}, runs=1$`),
        "the other instance answered",
      );
      assert.equal(item.attempt, 2, "the call was delivered a second time");
    },
  },
  {
    name: "work offered, accepted, answered, done",
    async run(world) {
      const { connection } = await world.startReadyWorker({ workerId: "conf-desk" });
      const conn = world.proxy.connections[connection]!;
      const session = await world.session(DESK_AGENT, "user");
      const reply = await session.responses.create("hello desk");
      assert.equal(reply.text, "the model answered");
      const offer = await conn.nextToWorker("work.offered");
      const workId = offer.workId;
      const mine = (f: Frame) => f.workId === workId;
      const accepted = await conn.next("work.accepted", mine);
      const answer = await conn.next("answer", mine);
      const done = await conn.next("work.done", mine);
      assert.equal(answer.sessionId, session.info.id);
      assert.equal(done.error, undefined, `work.done without error: ${JSON.stringify(done)}`);
      const order = [accepted, answer, done].map((f) => conn.fromWorker.indexOf(f));
      assert.deepEqual(
        [...order].sort((a, b) => a - b),
        order,
        "accepted, then answer, then done",
      );
      const loads = conn.fromWorker.filter((f) => f.type === "load").map((f) => f.active);
      assert.ok(loads.includes(1) && loads.at(-1) === 0, `load goes to 1 and back to 0: ${loads}`);
    },
  },
  {
    name: "failed work and incoming calls",
    async run(world) {
      const { connection } = await world.startReadyWorker({ workerId: "conf-desk2" });
      const conn = world.proxy.connections[connection]!;
      const sent = await world.post(`/v1/agents/${DESK_AGENT}/inbound/messages`, {
        channel: { type: "sms", id: "+15550100" },
        userId: "u_conformance",
        text: "fail please",
      });
      assert.equal(sent.status, 202);
      const offer = await conn.nextToWorker("work.offered");
      const done = await conn.next("work.done", (f) => f.workId === offer.workId);
      const error = done.error as { code?: string; message?: string } | undefined;
      assert.ok(error?.code, `a failed handler reports work.done with an error: ${JSON.stringify(done)}`);
      assert.match(String(error?.message), /deliberate failure/);
      const rang = await world.post(`/v1/agents/${DESK_AGENT}/inbound/calls`, {
        from: "+15550100",
        to: "+15550199",
      });
      assert.equal(rang.status, 202);
      const callOffer = await conn.nextToWorker(
        "work.offered",
        (f) => (f.work as { kind: string }).kind === "call",
      );
      const callDone = await conn.next("work.done", (f) => f.workId === callOffer.workId);
      assert.equal(callDone.error, undefined);
    },
  },
  {
    name: "load and drain",
    async run(world) {
      const { worker, connection } = await world.startReadyWorker({ workerId: "conf-drain", capacity: 2 });
      const conn = world.proxy.connections[connection]!;
      const sent = await world.post(`/v1/agents/${DESK_AGENT}/inbound/messages`, {
        channel: { type: "sms", id: "+15550101" },
        userId: "u_conformance",
        text: "hold 1000",
      });
      assert.equal(sent.status, 202);
      const offer = await conn.nextToWorker("work.offered");
      await conn.next("work.accepted", (f) => f.workId === offer.workId);
      await conn.next("load", (f) => f.active === 1 && f.capacity === 2);
      worker.signal("SIGTERM");
      const drain = await conn.next("load", (f) => f.capacity === 0, 3_000);
      const done = await conn.next("work.done", (f) => f.workId === offer.workId, 5_000);
      assert.equal(done.error, undefined, "running work finishes during the drain");
      assert.ok(conn.fromWorker.indexOf(drain) < conn.fromWorker.indexOf(done), "capacity 0 comes first");
      assert.equal(await worker.exitCode(5_000), 0, "a drained worker exits 0");
    },
  },
];
