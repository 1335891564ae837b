// Scenarios of a worker's conditional approval: the tool's check runs in the worker, a yes asks
// the server (`hosted.approval`), and the tool runs only on an `allowed` ack.
import assert from "node:assert/strict";
import type { ApprovalRequest, Session } from "@patchbay/client";
import { isTerminalToolCallStatus, type ToolCallItem } from "@patchbay/protocol";
import type { Scenario } from "./scenario";
import { endedCall, say } from "./scenario";
import { type Frame, waitFor } from "./worker-proxy";

const W = { workerId: "conf-w1" };

/** The session's call `callId` once it has ended. */
function ended(session: Session, callId: string): Promise<ToolCallItem> {
  return waitFor(
    () =>
      session.conversation.find(
        (item): item is ToolCallItem =>
          item.type === "tool_call" && item.id === callId && isTerminalToolCallStatus(item.status),
      ),
    (wake) => session.once("toolCall", wake),
    10_000,
    () => `the call ${callId} did not end within 10 s`,
  );
}

/** The approval the session asks its user for, once it is asked. */
function asked(session: Session): Promise<ApprovalRequest> {
  return waitFor(
    () => session.approvals[0],
    (wake) => session.once("approvals", wake),
    10_000,
    () => "no approval.requested reached the session within 10 s",
  );
}

const amountIs = (amount: number) => (f: Frame) => (f.arguments as { amount?: number }).amount === amount;

export const approvalScenarios: Scenario[] = [
  {
    name: "conditional approval",
    async run(world) {
      const { connection } = await world.startReadyWorker(W);
      const conn = world.proxy.connections[connection]!;
      const session = await world.session();

      // The check says no: the call runs at once, and nobody is asked.
      say(session, "pay 5");
      const small = await endedCall(session, "pay");
      assert.equal(small.result?.content.text, "paid 5", JSON.stringify(small.result));
      assert.equal(
        conn.fromWorker.filter((f) => f.type === "hosted.approval").length,
        0,
        "a call its check says no to runs without asking",
      );

      // The check says yes: the worker asks, and runs the tool only once the user allowed it.
      say(session, "pay 500");
      const call = await conn.nextToWorker("hosted.call", amountIs(500));
      const question = await conn.next("hosted.approval", (f) => f.callId === call.callId);
      assert.equal(question.attempt, call.attempt, "hosted.approval names the delivery that asks");
      const request = await asked(session);
      assert.equal(request.title, "Pay 500?");
      assert.equal(
        conn.fromWorker.some((f) => f.type === "hosted.result" && f.callId === call.callId),
        false,
        "the tool waits for the answer",
      );
      await session.decide(request.id, { allowed: true });
      const ack = await conn.nextToWorker("hosted.approval.ack", (f) => f.callId === call.callId);
      assert.equal(ack.outcome, "allowed");
      const result = await conn.next("hosted.result", (f) => f.callId === call.callId);
      assert.equal(result.attempt, call.attempt);
      assert.deepEqual(
        (result.result as { outcome: string; content: { text: string } }).outcome,
        "completed",
        JSON.stringify(result.result),
      );
      assert.equal((await ended(session, call.callId as string)).result?.content.text, "paid 500");

      // Declined: the call ends without the tool running.
      say(session, "pay 700");
      const refused = await conn.nextToWorker("hosted.call", amountIs(700));
      await conn.next("hosted.approval", (f) => f.callId === refused.callId);
      const second = await asked(session);
      assert.equal(second.title, "Pay 700?");
      await session.decide(second.id, { allowed: false, reason: "too much" });
      const item = await ended(session, refused.callId as string);
      assert.equal(item.result?.outcome, "declined", JSON.stringify(item.result));
      // Give a worker that runs it anyway the time to say so.
      await new Promise((resolve) => setTimeout(resolve, 200));
      const answered = conn.fromWorker.find((f) => f.type === "hosted.result" && f.callId === refused.callId);
      assert.notEqual(
        (answered?.result as { outcome?: string } | undefined)?.outcome,
        "completed",
        "a declined call never runs",
      );
    },
  },
];
