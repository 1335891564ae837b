import type { Client } from "@patchbay/client";
import type { AgentFileInput } from "@patchbay/server";
import { afterEach, describe, expect, it } from "vitest";
import { type DispatchHarness, startDispatchHarness } from "../fixtures/dispatch-harness";
import { backendClient, closeAllClients, userClient } from "./helpers/clients";

// Seed parity, "Leaving text to your server": a backend that skips answer() replies in its own
// words, through a real worker process (dispatch.reply) and through the client (sessions.reply).

const agents: Record<string, AgentFileInput> = {
  support: {
    model: { provider: "scripted", rules: [{ match: "^(?<text>.*)$", reply: "Model says: {text}" }] },
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

async function user(userId = "u_1"): Promise<Client> {
  return userClient(harness!, userId, 10_000);
}

const assistantTexts = (conversation: ReadonlyArray<{ type: string; role?: string; text?: string }>) =>
  conversation
    .filter((item) => item.type === "message" && item.role === "assistant")
    .map((item) => item.text);

describe("replying in the worker's own words", () => {
  it("dispatch.reply adds the assistant message and ends the user's turn with it; answer still lets the model reply", async () => {
    harness = await startDispatchHarness(agents);
    const worker = await harness.worker({ id: "w_reply", capacity: 2, messages: true });
    const session = await (await user()).agent("support").sessions.create();

    const reply = await session.responses.create("reply: A colleague will call you back today.");
    expect(reply).toMatchObject({
      reason: "answered_by_worker",
      text: "A colleague will call you back today.",
    });
    const replied = await worker.waitFor("replied");
    expect(replied.duplicate).toBe(false);

    const modelReply = await session.responses.create("where is my order?");
    expect(modelReply).toMatchObject({ reason: "stop", text: "Model says: where is my order?" });

    const { conversation } = await backend().agent("support").sessions.get(session.id);
    expect(assistantTexts(conversation)).toEqual([
      "A colleague will call you back today.",
      "Model says: where is my order?",
    ]);
    const ownWords = conversation.find(
      (item) => item.type === "message" && item.text?.startsWith("A colleague"),
    );
    expect(ownWords).toMatchObject({ role: "assistant", status: "completed", responseId: reply.id });
    // The page saw it live too, as the turn's message.
    expect(assistantTexts(session.conversation)).toEqual(assistantTexts(conversation));
  });

  it("sessions.reply from a backend ends a turn the worker still holds; the worker's late answer changes nothing", async () => {
    harness = await startDispatchHarness(agents);
    const worker = await harness.worker({ id: "w_hold", capacity: 1, messages: true });
    const session = await (await user()).agent("support").sessions.create();
    const pending = session.responses.create("hold 1500 please wait");
    const started = await worker.waitFor("work.started");
    expect(started.kind).toBe("message");
    const { conversation: before } = await backend().agent("support").sessions.get(session.id);
    const userMessage = before.find((item) => item.type === "message" && item.role === "user")!;

    const other = await backend()
      .agent("support")
      .sessions.reply(session.id, "wrong one", { messageId: "m_not_this_one" })
      .catch((e: unknown) => e);
    expect(other).toMatchObject({ wireCode: "conflict", path: "messageId" });

    const result = await backend().agent("support").sessions.reply(session.id, "Handled by our team.", {
      messageId: userMessage.id,
      commandId: "c_reply_1",
    });
    expect(result).toMatchObject({
      duplicate: false,
      message: { role: "assistant", text: "Handled by our team." },
    });
    expect(await pending).toMatchObject({ reason: "answered_by_worker", text: "Handled by our team." });

    // A retry of the same reply is a duplicate; a new one has no turn to end.
    const again = await backend()
      .agent("support")
      .sessions.reply(session.id, "Handled by our team.", { commandId: "c_reply_1" });
    expect(again).toMatchObject({ duplicate: true });
    const late = await backend()
      .agent("support")
      .sessions.reply(session.id, "late")
      .catch((e: unknown) => e);
    expect(late).toMatchObject({ wireCode: "conflict" });

    // The worker answers after its hold: the turn has ended, so the model does not reply.
    await worker.waitFor("work.finished");
    await new Promise((resolve) => setTimeout(resolve, 300));
    const { conversation } = await backend().agent("support").sessions.get(session.id);
    expect(assistantTexts(conversation)).toEqual(["Handled by our team."]);
  });

  it("refuses a reply with a user token, and a reply to a session whose agent does not dispatch", async () => {
    harness = await startDispatchHarness({
      ...agents,
      plain: { model: { provider: "scripted", rules: [{ match: ".", reply: "plain" }] } },
    });
    const userClient = await user();
    const session = await userClient.agent("support").sessions.create();
    const forbidden = await userClient
      .agent("support")
      .sessions.reply(session.id, "hi")
      .catch((e: unknown) => e);
    expect(forbidden).toMatchObject({ wireCode: "forbidden" });

    const plain = await backend().agent("plain").sessions.create({ userId: "u_2" });
    await plain.responses.create("hello");
    const conflict = await backend()
      .agent("plain")
      .sessions.reply(plain.id, "hi")
      .catch((e: unknown) => e);
    expect(conflict).toMatchObject({ wireCode: "conflict" });
    expect((conflict as Error).message).toMatch(/no turn of this session waits for a reply/);
  });
});
