import { createServer as createNetServer } from "node:net";
import { Client, createUserToken, Tools } from "@patchbay/client";
import { act, cleanup, fireEvent, render, screen, waitFor } from "@testing-library/react";
import { StrictMode, useEffect } from "react";
import { afterAll, afterEach, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import { z } from "zod";
import { ApprovalPrompt } from "./approval-prompt";
import { Conversation } from "./conversation";
import { PatchbayProvider } from "./patchbay-provider";
import { startStack, type TestStack } from "./testing/test-stack";
import { ToolCall } from "./tool-call";
import { defineTool, type ToolCallOf } from "./typed-tools";
import { type UseSessionResult, useApprovals, useSession, useToolCall } from "./use-session";

let stack: TestStack;
beforeAll(async () => {
  stack = await startStack();
});
afterAll(async () => {
  await stack.close();
});
afterEach(() => cleanup());

const runs = { location: 0, search: 0, searchAborted: 0 };
const getLocation = defineTool({
  name: "get_location",
  description: "Where the person is.",
  parameters: z.object({ reason: z.string() }),
  displayTitle: "Checking where you are",
  approval: {
    title: "Share your location?",
    reasonArgument: "reason",
    allowTitle: "Share",
    declineTitle: "Not now",
  },
  run: () => {
    runs.location++;
    return { place: "Amsterdam" };
  },
});
const slowSearch = defineTool({
  name: "slow_search",
  description: "Searches slowly.",
  parameters: z.object({ query: z.string() }),
  displayTitle: "Searching places",
  interruptible: true,
  run: async ({ query }, signal, ctx) => {
    runs.search++;
    for (let i = 1; i <= 50; i++) {
      ctx.update(`Looking for ${query}: ${i} of 50`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      if (signal.aborted) {
        runs.searchAborted++;
        throw signal.reason;
      }
    }
    return { count: 3 };
  },
});
const definitions = [getLocation, slowSearch] as const;
const makeTools = () => new Tools().register(getLocation).register(slowSearch);

let latest: UseSessionResult | undefined;
function Chat({ tools, resume }: { tools?: Tools; resume?: string }) {
  const chat = useSession("assistant", { tools, resume });
  const { approvals, decide } = useApprovals(chat.store);
  useEffect(() => {
    latest = chat;
  });
  return (
    <div>
      <p data-testid="status">{chat.status}</p>
      <Conversation items={chat.conversation} pending={chat.pending} interrupted={chat.interrupted} />
      {approvals.map((approval) => (
        <ApprovalPrompt key={approval.id} approval={approval} onDecide={decide} />
      ))}
      <button type="button" onClick={() => chat.send("where am I?")}>
        ask
      </button>
    </div>
  );
}

const status = () => screen.getByTestId("status").textContent;

let progress: string[] = [];
function Progress({ chat, callId }: { chat: UseSessionResult; callId: string }) {
  const call = useToolCall<typeof definitions>(chat.store, callId);
  if (call?.name === "slow_search") expectTypeOf(call.arguments).toEqualTypeOf<{ query: string }>();
  useEffect(() => {
    if (call?.progress) progress = [...progress, call.progress];
  }, [call?.progress]);
  return call ? <ToolCall item={call as never} /> : null;
}
function Follow() {
  const chat = useSession("assistant", { tools: makeTools() });
  useEffect(() => {
    latest = chat;
  });
  const call = chat.conversation.find((i) => i.type === "tool_call");
  return call ? <Progress chat={chat} callId={call.id} /> : <p data-testid="status">{chat.status}</p>;
}

describe("useSession against a real server", () => {
  it("opens one session under StrictMode, registers the tools once, and runs an approved page tool", async () => {
    const before = await stack.backend.agent("assistant").sessions.list({ userId: "user_1" });
    runs.location = 0;
    render(
      <StrictMode>
        <PatchbayProvider client={stack.client}>
          <Chat tools={makeTools()} />
        </PatchbayProvider>
      </StrictMode>,
    );
    expect(status()).toBe("connecting");
    await waitFor(() => expect(status()).toBe("idle"), { timeout: 5_000 });
    // The double-mounted effect kept the one session: one more on the server, not two.
    const after = await stack.backend.agent("assistant").sessions.list({ userId: "user_1" });
    expect(after.length - before.length).toBe(1);

    fireEvent.click(screen.getByText("ask"));
    await screen.findByTestId("approval", {}, { timeout: 5_000 });
    expect(status()).toBe("waiting_for_approval");
    expect(screen.getByText("Share your location?")).toBeTruthy();
    expect(screen.getByText("to tell you where you are")).toBeTruthy();
    fireEvent.click(screen.getByText("Share"));
    await waitFor(() => expect(screen.getByText("You are at Amsterdam.")).toBeTruthy(), { timeout: 5_000 });
    await waitFor(() => expect(status()).toBe("idle"));
    // The tool ran once in this page (registered once, not twice).
    expect(runs.location).toBe(1);
    const step = screen.getByTestId("tool-call");
    expect(step.getAttribute("data-status")).toBe("completed");
    expect(step.textContent).toContain("Checking where you are");
    expect(latest?.errors).toEqual([]);
  });

  it("declines an approval: the tool never runs and the reply says so", async () => {
    runs.location = 0;
    render(
      <PatchbayProvider client={stack.client}>
        <Chat tools={makeTools()} />
      </PatchbayProvider>,
    );
    await waitFor(() => expect(status()).toBe("idle"), { timeout: 5_000 });
    fireEvent.click(screen.getByText("ask"));
    await screen.findByTestId("approval", {}, { timeout: 5_000 });
    fireEvent.click(screen.getByText("Not now"));
    await waitFor(() => expect(screen.getByText("I did not get your location.")).toBeTruthy(), {
      timeout: 5_000,
    });
    expect(runs.location).toBe(0);
    expect(screen.getByTestId("tool-call").getAttribute("data-status")).toBe("declined");
  });

  it("streams, thinks, shows a long tool's progress, and says the reply was stopped", async () => {
    render(
      <PatchbayProvider client={stack.client}>
        <Chat tools={makeTools()} />
      </PatchbayProvider>,
    );
    await waitFor(() => expect(status()).toBe("idle"), { timeout: 5_000 });
    const seen = new Set<string>();
    const observer = setInterval(() => seen.add(status() ?? ""), 5);
    try {
      act(() => void latest!.send("tell me a long story"));
      await waitFor(() => expect(status()).toBe("idle"), { timeout: 10_000 });
    } finally {
      clearInterval(observer);
    }
    expect(seen.has("thinking") || seen.has("streaming")).toBe(true);
    expect(seen.has("streaming")).toBe(true);

    runs.searchAborted = 0;
    act(() => void latest!.send("search cafés"));
    await waitFor(() => expect(screen.getByText(/Looking for cafés: \d+ of 50/)).toBeTruthy(), {
      timeout: 5_000,
    });
    expect(status()).toBe("thinking");
    await act(() => latest!.interrupt());
    await waitFor(() => expect(status()).toBe("interrupted"), { timeout: 5_000 });
    expect(screen.getByTestId("interrupted").textContent).toBe("You stopped this reply.");
    expect(screen.getAllByTestId("tool-call").at(-1)!.getAttribute("data-status")).toBe("cancelled");
    await waitFor(() => expect(runs.searchAborted).toBe(1));
  });

  it("says an earlier reply was interrupted when a message is sent during it", async () => {
    render(
      <PatchbayProvider client={stack.client}>
        <Chat tools={makeTools()} />
      </PatchbayProvider>,
    );
    await waitFor(() => expect(status()).toBe("idle"), { timeout: 5_000 });
    act(() => void latest!.send("search cafés"));
    await waitFor(() => expect(screen.getByText(/Looking for cafés/)).toBeTruthy(), { timeout: 5_000 });
    act(() => void latest!.send("hello"));
    await waitFor(() => expect(screen.getByText("Hello from the test assistant.")).toBeTruthy(), {
      timeout: 10_000,
    });
    expect(screen.getByTestId("interrupted").textContent).toBe("Interrupted by your next message.");
  });

  it("resumes a session by id with its conversation and a pending approval", async () => {
    const first = render(
      <PatchbayProvider client={stack.client}>
        <Chat tools={makeTools()} />
      </PatchbayProvider>,
    );
    await waitFor(() => expect(status()).toBe("idle"), { timeout: 5_000 });
    const sessionId = latest!.sessionId!;
    fireEvent.click(screen.getByText("ask"));
    await screen.findByTestId("approval", {}, { timeout: 5_000 });
    first.unmount();
    await new Promise((resolve) => setTimeout(resolve, 50)); // the deferred close runs

    render(
      <PatchbayProvider client={stack.client}>
        <Chat tools={makeTools()} resume={sessionId} />
      </PatchbayProvider>,
    );
    await screen.findByTestId("approval", {}, { timeout: 5_000 });
    expect(latest!.sessionId).toBe(sessionId);
    expect(status()).toBe("waiting_for_approval");
    expect(screen.getAllByTestId("message-user").map((m) => m.textContent)).toEqual(["where am I?"]);
    fireEvent.click(screen.getByText("Share"));
    await waitFor(() => expect(screen.getByText("You are at Amsterdam.")).toBeTruthy(), { timeout: 5_000 });
  });

  it("replaces a session that no longer exists with a new one", async () => {
    render(
      <PatchbayProvider client={stack.client}>
        <Chat resume="s_does_not_exist" />
      </PatchbayProvider>,
    );
    await waitFor(() => expect(status()).toBe("idle"), { timeout: 5_000 });
    expect(latest!.sessionId).not.toBe("s_does_not_exist");
  });

  it("follows one tool call with useToolCall, typed by the page's definitions", async () => {
    render(
      <PatchbayProvider client={stack.client}>
        <Follow />
      </PatchbayProvider>,
    );
    await waitFor(() => expect(status()).toBe("idle"), { timeout: 5_000 });
    act(() => void latest!.send("search"));
    await waitFor(() => expect(progress.length).toBeGreaterThan(2), { timeout: 5_000 });
    expect(progress.every((p) => /^Looking for cafés: \d+ of 50$/.test(p))).toBe(true);
    await act(() => latest!.interrupt());
    type Call = ToolCallOf<typeof definitions>;
    expectTypeOf<Extract<Call, { name: "get_location" }>["arguments"]>().toEqualTypeOf<{ reason: string }>();
  });
});

// One provider; changing `k` re-keys the Chat: one commit unmounts the old and mounts the new.
function Keyed({ k, resume }: { k: string; resume?: string }) {
  return (
    <PatchbayProvider client={stack.client}>
      <Chat key={k} resume={resume} />
    </PatchbayProvider>
  );
}

describe("useSession sessions shared by stores of one client", () => {
  const isOpen = (id: string) => stack.client.sessions.some((s) => s.id === id && !s.closed);
  const tick = (ms = 50) => act(() => new Promise((resolve) => setTimeout(resolve, ms)));

  it("keeps the session open when a component is re-keyed and resumes it (README pattern)", async () => {
    const view = render(<Keyed k="a" />);
    await waitFor(() => expect(status()).toBe("idle"), { timeout: 5_000 });
    const sessionId = latest!.sessionId!;
    // One commit unmounts the old component and mounts the new one, which resumes the same id.
    view.rerender(<Keyed k="b" resume={sessionId} />);
    await tick(); // the old store's deferred close runs
    await waitFor(() => expect(status()).toBe("idle"), { timeout: 5_000 });
    expect(latest!.sessionId).toBe(sessionId);
    expect(latest!.session!.closed).toBe(false);
    expect(isOpen(sessionId)).toBe(true);
    act(() => void latest!.send("hello"));
    await waitFor(() => expect(screen.getByText("Hello from the test assistant.")).toBeTruthy(), {
      timeout: 5_000,
    });
    expect(latest!.errors).toEqual([]);
    view.unmount();
    await tick();
    // The last store let go: now it closes.
    expect(isOpen(sessionId)).toBe(false);
  });

  it("keeps the session open when the old component unmounts while its resume is in flight", async () => {
    const created = await stack.client.agent("assistant").sessions.create();
    const sessionId = created.id;
    created.close();
    await new Promise((resolve) => setTimeout(resolve, 20));
    const view = render(<Keyed k="a" resume={sessionId} />);
    // Re-keyed before the first resume settled: both resumes are in flight.
    view.rerender(<Keyed k="b" resume={sessionId} />);
    await tick();
    await waitFor(() => expect(status()).toBe("idle"), { timeout: 5_000 });
    await tick();
    expect(latest!.sessionId).toBe(sessionId);
    expect(latest!.session!.closed).toBe(false);
    expect(isOpen(sessionId)).toBe(true);
    act(() => void latest!.send("hello"));
    await waitFor(() => expect(screen.getByText("Hello from the test assistant.")).toBeTruthy(), {
      timeout: 5_000,
    });
    expect(latest!.errors).toEqual([]);
    view.unmount();
    await tick();
    expect(isOpen(sessionId)).toBe(false);
  });

  it("closes what an open in flight opened when the component is gone by then", async () => {
    const created = await stack.client.agent("assistant").sessions.create();
    const sessionId = created.id;
    created.close();
    const view = render(<Keyed k="a" resume={sessionId} />);
    view.unmount();
    await tick(300);
    expect(isOpen(sessionId)).toBe(false);
  });

  it("stays thinking between the user's message and the start of its reply (no idle flicker)", async () => {
    render(<Keyed k="a" />);
    await waitFor(() => expect(status()).toBe("idle"), { timeout: 5_000 });
    const store = latest!.store;
    const seen: string[] = [];
    const unsubscribe = store.subscribe(() => {
      const snapshot = store.getSnapshot();
      const last = snapshot.conversation.at(-1);
      if (last?.type === "message" && last.role === "user") seen.push(snapshot.status);
    });
    try {
      act(() => void latest!.send("hello"));
      await waitFor(() => expect(screen.getByText("Hello from the test assistant.")).toBeTruthy(), {
        timeout: 5_000,
      });
    } finally {
      unsubscribe();
    }
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.filter((s) => s !== "thinking")).toEqual([]);
    await waitFor(() => expect(status()).toBe("idle"));
  });

  it("says closed when the session was deleted, and a send fails in errors", async () => {
    render(<Keyed k="a" />);
    await waitFor(() => expect(status()).toBe("idle"), { timeout: 5_000 });
    const sessionId = latest!.sessionId!;
    await act(() => stack.client.agent("assistant").sessions.delete(sessionId));
    await waitFor(() => expect(status()).toBe("closed"), { timeout: 5_000 });
    expect(latest!.connection).toBe("closed");
    const before = latest!.errors.length;
    let response: unknown = "unset";
    act(() => {
      response = latest!.send("hello");
    });
    expect(response).toBeUndefined();
    await waitFor(() => expect(latest!.errors.length).toBe(before + 1));
    expect(latest!.errors.at(-1)!.code).toBe("disconnected");
    expect(latest!.pending).toEqual([]);
  });
});

describe("useSession when the server is unreachable at mount", () => {
  it("retries a failed open and opens once the server is there", async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createNetServer().listen(0, "127.0.0.1", () => {
        const address = probe.address();
        probe.close(() => resolve(typeof address === "object" && address ? address.port : 0));
      });
    });
    const secret = `secret-${Math.random().toString(36).slice(2)}`;
    const client = new Client({
      baseUrl: `http://127.0.0.1:${port}`,
      requestTimeoutMs: 300,
      reconnect: { initialDelayMs: 50, maxDelayMs: 200 },
    });
    client.setUser({ id: "user_1" }, await createUserToken(secret, "user_1", { expiresIn: "1h" }));
    let late: TestStack | undefined;
    try {
      render(
        <PatchbayProvider client={client}>
          <Chat />
        </PatchbayProvider>,
      );
      await waitFor(() => expect(status()).toBe("failed"), { timeout: 5_000 });
      expect(latest!.errors.length).toBeGreaterThan(0);
      late = await startStack("user_1", { port, secret });
      await waitFor(() => expect(status()).toBe("idle"), { timeout: 10_000 });
      expect(latest!.sessionId).toBeDefined();
      act(() => void latest!.send("hello"));
      await waitFor(() => expect(screen.getByText("Hello from the test assistant.")).toBeTruthy(), {
        timeout: 5_000,
      });
    } finally {
      cleanup();
      client.close();
      await late?.close();
    }
  });
});
