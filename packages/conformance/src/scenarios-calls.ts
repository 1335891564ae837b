// Scenarios of hosted tool calls: results, validation on both sides, progress and say, images,
// cancel, hold and timeout.
import assert from "node:assert/strict";
import type { ToolCallItem } from "@patchbay/protocol";
import type { Scenario } from "./scenario";
import { endedCall, injectedCall, say } from "./scenario";
import type { Frame } from "./worker-proxy";

const W = { workerId: "conf-w1" };

export const callScenarios: Scenario[] = [
  {
    name: "hosted call and result",
    async run(world) {
      const { connection } = await world.startReadyWorker(W);
      const session = await world.session();
      say(session, "echo hello there");
      const item = await endedCall(session, "echo");
      assert.equal(item.status, "completed", JSON.stringify(item.result));
      assert.equal(item.result?.content.text, "echo:hello there");
      const conn = world.proxy.connections[connection]!;
      const call = await conn.nextToWorker("hosted.call");
      const result = await conn.next("hosted.result", (f) => f.callId === call.callId);
      assert.equal(result.attempt, call.attempt, "hosted.result answers the attempt it ran");
    },
  },
  {
    name: "tool call context",
    async run(world) {
      await world.startReadyWorker(W);
      const session = await world.session();
      say(session, "describe");
      const item = await endedCall(session, "describe_call");
      assert.equal(item.status, "completed", JSON.stringify(item.result));
      const seen = JSON.parse(item.result!.content.text) as Record<string, unknown>;
      assert.deepEqual(seen, {
        callId: item.id,
        attempt: 1,
        sessionId: session.info.id,
        userId: "u_conformance",
        workerId: W.workerId,
      });
    },
  },
  {
    name: "server-side validation",
    async run(world) {
      const { connection } = await world.startReadyWorker(W);
      const session = await world.session();
      say(session, "echo-missing");
      const item = await endedCall(session, "echo");
      assert.equal(item.result?.outcome, "invalid_arguments");
      const conn = world.proxy.connections[connection]!;
      assert.equal(
        conn.toWorker.filter((f) => f.type === "hosted.call").length,
        0,
        "a call whose arguments do not fit the tool's schema never reaches the worker",
      );
    },
  },
  {
    name: "worker-side validation and unknown tools",
    async run(world) {
      const { connection } = await world.startReadyWorker(W);
      const conn = world.proxy.connections[connection]!;
      conn.intercepted.add("call_conf_bad_args");
      conn.intercepted.add("call_conf_unknown");
      conn.inject(injectedCall("call_conf_bad_args", "echo", { text: 42 }));
      conn.inject(injectedCall("call_conf_unknown", "no_such_tool", {}));
      const bad = await conn.next("hosted.result", (f) => f.callId === "call_conf_bad_args");
      const badResult = bad.result as {
        outcome: string;
        error?: { code: string };
        content: { text: string };
      };
      assert.equal(badResult.outcome, "invalid_arguments", JSON.stringify(badResult));
      assert.ok(badResult.error?.code, "a refused call carries an error code");
      assert.match(badResult.content.text, /text/, "the model is told which argument was wrong");
      const unknown = await conn.next("hosted.result", (f) => f.callId === "call_conf_unknown");
      assert.equal((unknown.result as { outcome: string }).outcome, "unknown_tool");
      assert.ok(world.proxy.connections[connection]!.isClosed === false, "the worker keeps its socket");
    },
  },
  {
    name: "failing tool",
    async run(world) {
      await world.startReadyWorker(W);
      const session = await world.session();
      say(session, "fail");
      const item = await endedCall(session, "fail");
      assert.equal(item.result?.outcome, "failed");
      assert.ok(item.result?.error?.code, "a failed result carries an error code");
      assert.match(item.result!.content.text, /deliberate failure/);
    },
  },
  {
    name: "progress and say",
    async run(world) {
      const { connection } = await world.startReadyWorker(W);
      const conn = world.proxy.connections[connection]!;
      const session = await world.session();
      const said: string[] = [];
      session.on("say", ({ text }) => said.push(text));
      say(session, "report 3");
      const item = await endedCall(session, "report");
      assert.equal(item.result?.content.text, "reported 3 steps");
      const mine = (f: Frame) => f.callId === item.id;
      // Progress is a status line: a worker may coalesce updates made within one moment (the
      // newest wins), so the updates 50 ms apart arrive in order, the last one always.
      const steps = ["step 1 of 3", "step 2 of 3", "step 3 of 3"];
      const progress = conn.fromWorker
        .filter((f) => f.type === "hosted.progress" && mine(f))
        .map((f) => f.text);
      assert.equal(progress.at(-1), "step 3 of 3", `progress: ${JSON.stringify(progress)}`);
      const positions = progress.map((text) => steps.indexOf(String(text)));
      assert.ok(
        positions.every((p, i) => p >= 0 && (i === 0 || p > positions[i - 1]!)),
        `progress in order: ${JSON.stringify(progress)}`,
      );
      const says = conn.fromWorker.filter((f) => f.type === "hosted.say" && mine(f));
      assert.deepEqual(
        says.map((f) => f.text),
        ["Exactly these words."],
      );
      const result = conn.fromWorker.find((f) => f.type === "hosted.result" && mine(f))!;
      assert.ok(
        conn.fromWorker.indexOf(says[0]!) < conn.fromWorker.indexOf(result),
        "progress and say come before the result",
      );
      assert.deepEqual(said, ["Exactly these words."], "the session hears the say");
    },
  },
  {
    name: "image results",
    async run(world) {
      await world.startReadyWorker(W);
      const session = await world.session();
      say(session, "image");
      const item = await endedCall(session, "image");
      assert.equal(item.status, "completed", JSON.stringify(item.result));
      const image = item.result?.content.images?.[0] as { mimeType?: string; data?: string } | undefined;
      assert.equal(image?.mimeType, "image/png");
      const bytes = Buffer.from(image?.data ?? "", "base64");
      assert.equal(bytes.subarray(1, 4).toString("latin1"), "PNG", "the image data is the PNG, base64");
    },
  },
  {
    name: "cancel on interrupt",
    async run(world) {
      const { connection } = await world.startReadyWorker(W);
      const conn = world.proxy.connections[connection]!;
      const session = await world.session();
      say(session, "wait 20000");
      const call = await conn.nextToWorker("hosted.call");
      await session.interrupt();
      const cancel = await conn.nextToWorker("hosted.cancel", (f) => f.callId === call.callId);
      assert.equal(cancel.reason, "interrupted");
      const result = await conn.next("hosted.result", (f) => f.callId === call.callId, 3_000);
      assert.equal((result.result as { outcome: string }).outcome, "cancelled", "the worker stops the call");
      assert.equal(result.attempt, call.attempt);
      const item = await endedCall(session, "wait");
      assert.equal(item.status, "cancelled");
    },
  },
  {
    name: "hold acknowledged versus interrupt",
    async run(world) {
      const { connection } = await world.startReadyWorker(W);
      const conn = world.proxy.connections[connection]!;
      const session = await world.session();
      const held = new Promise<void>((resolve) => session.once("held", () => resolve()));
      say(session, "hold 1200");
      const call = await conn.nextToWorker("hosted.call");
      const hold = await conn.next("hosted.hold", (f) => f.callId === call.callId);
      assert.equal(hold.attempt, call.attempt, "the hold names the attempt it holds");
      const ack = await conn.nextToWorker("hosted.hold.ack", (f) => f.callId === call.callId);
      assert.equal(ack.accepted, true, `the hold is acknowledged: ${JSON.stringify(ack)}`);
      await held;
      await session.interrupt();
      const item = await endedCall(session, "hold_then_wait");
      assert.equal(item.status, "completed", `a held call runs to its end: ${JSON.stringify(item.result)}`);
      assert.equal(item.result?.content.text, "held and waited 1200 ms");
      assert.equal(item.held, true);
    },
  },
  {
    name: "timeout",
    async run(world) {
      const { connection } = await world.startReadyWorker(W);
      const conn = world.proxy.connections[connection]!;
      const session = await world.session();
      say(session, "sleepy");
      const call = await conn.nextToWorker("hosted.call");
      // The frame carries the time left when it was sent (the server's clock), so a loaded
      // machine may read a few milliseconds under the spec's 1,000.
      const left = call.timeoutMs;
      assert.ok(
        typeof left === "number" && left <= 1_000 && left > 500,
        `the tool spec's timeoutMs (1000) bounds the call's time left: ${String(left)}`,
      );
      const cancel = await conn.nextToWorker("hosted.cancel", (f) => f.callId === call.callId, 5_000);
      assert.equal(cancel.reason, "timed_out");
      const result = await conn.next("hosted.result", (f) => f.callId === call.callId, 3_000);
      // The worker stops the call: `cancelled` (it obeyed the cancel) or `timed_out` (its own
      // timer, armed with the call's timeoutMs, fired first). Both end the tool.
      const outcome = (result.result as { outcome: string }).outcome;
      assert.ok(["cancelled", "timed_out"].includes(outcome), `the worker stops the call: ${outcome}`);
      const item = await endedCall(session, "sleepy");
      assert.equal(item.status, "timed_out");
    },
  },
  {
    name: "large frames from the server",
    // Megabytes through the proxy and the server in one process, on a loaded machine, can hold
    // the event loop past two 400 ms intervals; this scenario is about size, not heartbeats.
    heartbeatMs: 2_000,
    async run(world) {
      const { connection } = await world.startReadyWorker(W);
      const conn = world.proxy.connections[connection]!;
      // A worker reads frames up to what it says in worker.hello.maxFrameBytes (1 MiB when it
      // says nothing; the server sends nothing larger). A call just under that, capped at 4 MiB,
      // must be taken and answered on the same socket.
      const declared = typeof conn.hello?.maxFrameBytes === "number" ? conn.hello.maxFrameBytes : 1024 * 1024;
      const size = Math.min(declared, 4 * 1024 * 1024) - 16 * 1024;
      const text = "x".repeat(size);
      conn.intercepted.add("call_conf_large");
      conn.inject(injectedCall("call_conf_large", "echo", { text }));
      const result = await conn.next("hosted.result", (f) => f.callId === "call_conf_large", 10_000);
      const content = (result.result as { content: { text: string } }).content;
      assert.equal(content.text.length, text.length + "echo:".length);
      assert.equal(conn.isClosed, false);
      // And the session keeps working on the same socket.
      const session = await world.session();
      say(session, "echo after");
      assert.equal((await endedCall(session, "echo")).result?.content.text, "echo:after");
      assert.equal(world.proxy.connections.length, 1, "no reconnect");
    },
  },
  {
    name: "conversation kept between calls",
    async run(world) {
      const { connection } = await world.startReadyWorker(W);
      const conn = world.proxy.connections[connection]!;
      const session = await world.session();
      for (let n = 1; n <= 3; n++) await session.responses.create(`recall ${n}`);
      // Each call's tool read the whole conversation of its moment, whatever the frames carried:
      // every earlier item as it ended, the call itself running.
      const items = session.conversation;
      const calls = items.filter((item): item is ToolCallItem => item.type === "tool_call");
      assert.equal(calls.length, 3, JSON.stringify(items).slice(0, 600));
      for (const call of calls) {
        assert.equal(call.status, "completed", JSON.stringify(call.result));
        const at = items.findIndex((item) => item.id === call.id);
        const expected = items
          .slice(0, at + 1)
          .map((item) => [
            item.id,
            item.type === "message" ? item.text : item === call ? "running" : item.status,
          ]);
        assert.deepEqual(JSON.parse(call.result!.content.text), expected, `what ${call.id} read`);
      }
      // Optional in the protocol: a worker that asks for it gets only new and changed items.
      if (conn.hello?.conversationCache === undefined) return;
      const last = conn.toWorker.filter((f) => f.type === "hosted.call").at(-1)!;
      const ids = last.conversationIds as string[];
      assert.ok(Array.isArray(ids), "a worker that keeps conversations gets conversationIds");
      assert.ok((last.conversation as unknown[]).length < ids.length, "kept items are not sent again");
      // A call that names an item the worker never got: it cannot rebuild the conversation, so
      // it drops the socket (both ends start empty on the next) and does not run the call.
      conn.intercepted.add("call_conf_out_of_step");
      conn.inject({
        ...injectedCall("call_conf_out_of_step", "recall", { n: 0 }),
        sessionId: session.info.id,
        conversationIds: ["m_conf_never_sent"],
      });
      await conn.closed;
      await world.proxy.connection(connection + 1);
      assert.ok(
        !conn.fromWorker.some((f) => f.type === "hosted.result" && f.callId === "call_conf_out_of_step"),
        "a call out of step is not run",
      );
    },
  },
];
