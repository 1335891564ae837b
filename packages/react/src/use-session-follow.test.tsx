// useSession follows its arguments: another agent or another resume id lets go of the session
// (closed once no other store holds it) and opens the one they name; a re-render with the same
// values (a new options object, new tools) keeps the session. Against a real server on loopback.
import { type ConversationItem, Tools } from "@patchbay/client";
import { act, cleanup, render, waitFor } from "@testing-library/react";
import { StrictMode, useEffect } from "react";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { PatchbayProvider } from "./patchbay-provider";
import { sessionHolders } from "./session-holders";
import { startStack, type TestStack } from "./testing/test-stack";
import { type UseSessionResult, useSession } from "./use-session";

let stack: TestStack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack.close();
});
afterEach(() => cleanup());

const texts = (items: readonly ConversationItem[]) =>
  items.flatMap((item) => (item.type === "message" ? [item.text] : []));

/** What each committed render showed, per component name. */
interface Seen {
  agent: string;
  resume: string | undefined;
  status: string;
  sessionId: string | undefined;
  texts: string[];
}
let seen: Seen[] = [];
const latest: Record<string, UseSessionResult> = {};

function Chat({ name = "chat", agent, resume }: { name?: string; agent: string; resume?: string }) {
  // A new options object and a new Tools on every render: only `agent` and `resume` name the session.
  const chat = useSession(agent, { tools: new Tools(), resume });
  useEffect(() => {
    latest[name] = chat;
    if (name === "chat") {
      seen.push({
        agent,
        resume,
        status: chat.status,
        sessionId: chat.sessionId,
        texts: texts(chat.conversation),
      });
    }
  });
  return <p>{chat.status}</p>;
}

function App({ agent = "assistant", resume }: { agent?: string; resume?: string }) {
  return (
    <StrictMode>
      <PatchbayProvider client={stack.client}>
        <Chat agent={agent} resume={resume} />
      </PatchbayProvider>
    </StrictMode>
  );
}

// Two components resuming one session; the first one switches agent.
function Two({ agent, sharedId }: { agent: string; sharedId: string }) {
  return (
    <PatchbayProvider client={stack.client}>
      <Chat name="chat" agent={agent} resume={agent === "assistant" ? sharedId : undefined} />
      <Chat name="stays" agent="assistant" resume={sharedId} />
    </PatchbayProvider>
  );
}

const chat = () => latest.chat!;
const tick = (ms = 50) => act(() => new Promise((resolve) => setTimeout(resolve, ms)));
const openOnClient = () => stack.client.sessions.filter((s) => !s.closed).map((s) => s.id);
const loadedOnServer = () => stack.server.sessions.loaded().map((live) => live.id);
const idle = () => waitFor(() => expect(chat().status).toBe("idle"), { timeout: 5_000 });

async function say(text: string, reply: string, name = "chat") {
  act(() => void latest[name]!.send(text));
  await waitFor(() => expect(texts(latest[name]!.conversation)).toContain(reply), { timeout: 5_000 });
  await waitFor(() => expect(latest[name]!.status).toBe("idle"));
}

describe("useSession follows its agent and resume id", () => {
  it("opens a session of the new agent when the agent changes, and closes the old one", async () => {
    const view = render(<App agent="assistant" />);
    await idle();
    const oldId = chat().sessionId!;
    await say("hello", "Hello from the test assistant.");
    const onServer = async (id: string) =>
      texts((await stack.backend.agent("assistant").sessions.get(id)).conversation);
    expect(await onServer(oldId)).toEqual(["hello", "Hello from the test assistant."]);

    seen = [];
    view.rerender(<App agent="other" />);
    await waitFor(() => expect(chat().sessionId).toBeDefined(), { timeout: 5_000 });
    await idle();
    const newId = chat().sessionId!;
    expect(newId).not.toBe(oldId);
    expect(chat().session!.info.agent).toBe("other");
    // The new agent's renders start over: connecting, and nothing of the old conversation.
    const after = seen.filter((s) => s.agent === "other");
    expect(after[0]!.status).toBe("connecting");
    expect(after.every((s) => s.sessionId !== oldId && s.texts.length === 0)).toBe(true);

    // The old session was let go: closed on the client, unloaded on the server.
    await tick();
    expect(openOnClient()).not.toContain(oldId);
    await waitFor(() => expect(loadedOnServer()).not.toContain(oldId));

    // New messages go to the new session; the old one got nothing more.
    await say("hello", "Hello from the other assistant.");
    expect(texts(chat().session!.conversation)).toEqual(["hello", "Hello from the other assistant."]);
    expect(await onServer(oldId)).toEqual(["hello", "Hello from the test assistant."]);
    expect(await onServer(newId)).toEqual(["hello", "Hello from the other assistant."]);
    view.unmount();
    await tick();
    expect(openOnClient()).not.toContain(newId);
  });

  it("resumes the named session when resume changes, without the old session's messages", async () => {
    const other = await stack.client.agent("assistant").sessions.create();
    await other.responses.create("hello");
    other.close();

    const view = render(<App />);
    await idle();
    const oldId = chat().sessionId!;
    await say(
      "tell me a long story",
      "Once upon a time there was a very long story that went on and on and on and on and on and on and on and on and on and on and on.",
    );

    seen = [];
    view.rerender(<App resume={other.id} />);
    await waitFor(() => expect(chat().sessionId).toBe(other.id), { timeout: 5_000 });
    await idle();
    expect(texts(chat().conversation)).toEqual(["hello", "Hello from the test assistant."]);
    const after = seen.filter((s) => s.resume === other.id);
    expect(after[0]!.status).toBe("connecting");
    expect(after.every((s) => s.sessionId !== oldId && !s.texts.includes("tell me a long story"))).toBe(true);
    await tick();
    expect(openOnClient()).not.toContain(oldId);
    await waitFor(() => expect(loadedOnServer()).not.toContain(oldId));
    view.unmount();
    await tick();
    expect(openOnClient()).not.toContain(other.id);
  });

  it("opens a new session when resume goes back to none (a removed stored id)", async () => {
    const view = render(<App />);
    await idle();
    const firstId = chat().sessionId!;
    view.rerender(<App resume={firstId} />);
    await tick();
    expect(chat().sessionId).toBe(firstId);

    seen = [];
    view.rerender(<App />);
    await waitFor(() => expect(chat().sessionId).toBeDefined(), { timeout: 5_000 });
    await idle();
    expect(chat().sessionId).not.toBe(firstId);
    expect(seen[0]!.status).toBe("connecting");
    await tick();
    expect(openOnClient()).not.toContain(firstId);
  });

  it("keeps a session another component still holds when one of them switches agent", async () => {
    const created = await stack.client.agent("assistant").sessions.create();
    const sharedId = created.id;
    created.close();
    await tick(20);
    const view = render(<Two agent="assistant" sharedId={sharedId} />);
    await idle();
    await waitFor(() => expect(latest.stays!.status).toBe("idle"), { timeout: 5_000 });
    expect(chat().sessionId).toBe(sharedId);
    expect(sessionHolders(stack.client, sharedId)).toBe(2);

    view.rerender(<Two agent="other" sharedId={sharedId} />);
    await waitFor(() => expect(chat().session?.info.agent).toBe("other"), { timeout: 5_000 });
    await idle();
    await tick();
    // The switched component let go of its hold; the other one keeps the session open.
    expect(sessionHolders(stack.client, sharedId)).toBe(1);
    expect(latest.stays!.session!.closed).toBe(false);
    expect(openOnClient()).toContain(sharedId);
    await say("hello", "Hello from the test assistant.", "stays");
    expect(latest.stays!.errors).toEqual([]);
    view.unmount();
    await tick();
    expect(openOnClient()).not.toContain(sharedId);
  });

  it("keeps the session on re-renders with the same agent and resume (new options object, new tools)", async () => {
    const view = render(<App />);
    await idle();
    const id = chat().sessionId!;
    const store = chat().store;
    const listed = (await stack.backend.agent("assistant").sessions.list({ userId: "user_1" })).length;

    seen = [];
    view.rerender(<App />);
    view.rerender(<App />);
    // The README pattern: the stored id comes back as `resume`; it names the session already open.
    view.rerender(<App resume={id} />);
    view.rerender(<App resume={id} />);
    await tick();
    expect(chat().store).toBe(store);
    expect(chat().sessionId).toBe(id);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((s) => s.status === "idle" && s.sessionId === id)).toBe(true);
    expect((await stack.backend.agent("assistant").sessions.list({ userId: "user_1" })).length).toBe(listed);
    expect(sessionHolders(stack.client, id)).toBe(1);
    await say("hello", "Hello from the test assistant.");
  });

  it("keeps the replacement session when its id comes back as resume (a resumed id that no longer exists)", async () => {
    const view = render(<App resume="s_gone_for_good" />);
    await idle();
    const id = chat().sessionId!;
    expect(id).not.toBe("s_gone_for_good");
    const store = chat().store;
    seen = [];
    view.rerender(<App resume={id} />);
    await tick();
    expect(chat().store).toBe(store);
    expect(seen.every((s) => s.status === "idle" && s.sessionId === id)).toBe(true);
  });

  it("leaves only the last session open after switching agents back and forth quickly", async () => {
    await tick();
    const openBefore = new Set(openOnClient());
    const loadedBefore = new Set(loadedOnServer());
    const view = render(<App agent="assistant" />);
    view.rerender(<App agent="other" />);
    view.rerender(<App agent="assistant" />);
    await tick(5);
    view.rerender(<App agent="other" />);
    view.rerender(<App agent="assistant" />);
    view.rerender(<App agent="other" />);
    await waitFor(() => expect(chat().session?.info.agent).toBe("other"), { timeout: 5_000 });
    await idle();
    const id = chat().sessionId!;
    // Opens still in flight when their store was let go close their session once they settle.
    await tick(300);
    expect(openOnClient().filter((s) => !openBefore.has(s))).toEqual([id]);
    await waitFor(() => expect(loadedOnServer().filter((s) => !loadedBefore.has(s))).toEqual([id]));
    await say("hello", "Hello from the other assistant.");
    view.unmount();
    await tick();
    expect(openOnClient().filter((s) => !openBefore.has(s))).toEqual([]);
  });
});
