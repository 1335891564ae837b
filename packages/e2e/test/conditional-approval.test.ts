// #22: conditional approval (`approval.when`) wherever a tool runs: in the server process (the
// server calls `when`), on a dispatch worker and in a page (their SDK calls `when`, and a yes asks
// the server over `hosted.approval` / `tool.approval`). `when` true asks, false runs without
// asking, an async `when` is awaited, a throwing one fails the call with a short sentence while
// the host's log gets the error. Real server, worker and clients on 127.0.0.1.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client, type Session } from "@patchbay/client";
import { Dispatch } from "@patchbay/dispatch";
import { createLogger, createServer, type PatchbayServer } from "@patchbay/server";
import { type ToolDefinition, Tools } from "@patchbay/tools";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";

const apiKey = "pk_conditional_approval";
const secret = "sk_conditional_approval_secret_0123456789abcdef";
const places = ["server", "worker", "page"] as const;
type Place = (typeof places)[number];

let server: PatchbayServer;
let dir: string;
let dispatch: Dispatch;
const serverLog: string[] = [];
const workerLog: Array<{ msg: string; error?: unknown }> = [];
const clients: Client[] = [];
/** Each run of a tool, by place. */
const runs: Record<Place, number[]> = { server: [], worker: [], page: [] };

/**
 * The same payment tool for each place: it asks above 100, `when` is async (it checks a limit
 * service), and 13 makes the service fail.
 */
function payTool(place: Place): ToolDefinition<{ amount: number }> {
  return {
    name: `pay_${place}`,
    description: "Pay an invoice",
    parameters: { type: "object", properties: { amount: { type: "integer" } }, required: ["amount"] },
    approval: {
      title: "Pay {amount}?",
      when: async ({ amount }, ctx) => {
        await new Promise((resolve) => setTimeout(resolve, 10));
        if (amount === 13) throw new Error(`limit service refused ${ctx.id}: 10.0.0.7 unreachable`);
        return amount > 100;
      },
    },
    run: ({ amount }) => {
      runs[place].push(amount);
      return `paid ${amount}`;
    },
  };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "patchbay-conditional-e2e-"));
  server = await createServer({
    host: "127.0.0.1",
    port: 0,
    dataDir: dir,
    apiKey,
    secret,
    env: {},
    logger: createLogger({ level: "warn", format: "json", write: (line) => serverLog.push(line) }),
    tools: new Tools().register(payTool("server")),
    agents: {
      support: {
        model: {
          provider: "scripted",
          rules: places.map((place) => ({
            match: `^pay ${place} (?<amount>\\d+)`,
            toolCalls: [{ tool: `pay_${place}`, arguments: { amount: "{amount:integer}" } }],
            reply: "Done: {result}",
            errorReply: "Failed: {result}",
          })),
        },
      },
    },
  });
  dispatch = new Dispatch({
    url: server.url,
    apiKey,
    secret,
    env: {},
    logger: { warn: (msg, fields) => workerLog.push({ msg, error: fields?.error }) },
  });
  dispatch.host("support", new Tools().register(payTool("worker")));
  const ready = new Promise((resolve) => dispatch.once("ready", resolve));
  void dispatch.run();
  await ready;
});

afterEach(() => {
  for (const client of clients.splice(0)) client.close();
  for (const place of places) runs[place].length = 0;
});

afterAll(async () => {
  await dispatch?.stop({ timeoutMs: 1_000 });
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

function client(): Client {
  const made = new Client({ baseUrl: server.url, apiKey, secret, requestTimeoutMs: 10_000 });
  clients.push(made);
  return made;
}

/** A session for the place: a page session brings its own tools. */
function open(place: Place): Promise<Session> {
  const sessions = client().agent("support").sessions;
  return place === "page"
    ? sessions.create({ userId: "u_1", tools: new Tools().register(payTool("page")) })
    : sessions.create({ userId: "u_1" });
}

describe.each(places)("approval.when of a tool that runs in the %s", (place) => {
  it("asks when `when` says true: the call waits for the user and runs once allowed", async () => {
    const session = await open(place);
    const asked: string[] = [];
    session.on("approval", (request) => {
      asked.push(request.title);
      void session.decide(request.id, { allowed: true });
    });
    const reply = await session.responses.create(`pay ${place} 500`);
    expect(reply.text).toBe("Done: paid 500");
    expect(asked).toEqual(["Pay 500?"]);
    expect(runs[place]).toEqual([500]);
  });

  it("runs without asking when `when` says false", async () => {
    const session = await open(place);
    const asked = vi.fn();
    session.on("approval", asked);
    expect((await session.responses.create(`pay ${place} 20`)).text).toBe("Done: paid 20");
    expect(asked).not.toHaveBeenCalled();
    expect(session.approvals).toEqual([]);
    expect(runs[place]).toEqual([20]);
  });

  it("does not run a call the user declines, and tells the model their reason", async () => {
    const session = await open(place);
    session.on(
      "approval",
      (request) => void session.decide(request.id, { allowed: false, reason: "not now" }),
    );
    expect((await session.responses.create(`pay ${place} 900`)).text).toBe(
      `Failed: The user declined the call of "pay_${place}"; it did not run. Their reason: not now`,
    );
    expect(runs[place]).toEqual([]);
  });

  it("fails the call when `when` throws: a short sentence for the model, the error in the host's log", async () => {
    const warned = place === "page" ? vi.spyOn(console, "warn").mockImplementation(() => {}) : undefined;
    try {
      const session = await open(place);
      const reply = await session.responses.create(`pay ${place} 13`);
      expect(reply.text).toBe(
        `Failed: "pay_${place}" did not run: whether to ask the user could not be decided.`,
      );
      expect(runs[place]).toEqual([]);
      const callId = session.conversation.find((i) => i.type === "tool_call")?.id;
      const detail = `limit service refused ${callId}: 10.0.0.7 unreachable`;
      if (place === "server") {
        await vi.waitFor(() => expect(serverLog.some((line) => line.includes(detail))).toBe(true));
      } else if (place === "worker") {
        await vi.waitFor(() =>
          expect(workerLog.some((e) => e.error instanceof Error && e.error.message === detail)).toBe(true),
        );
      } else {
        expect(
          warned!.mock.calls.some((args) => args.some((a) => a instanceof Error && a.message === detail)),
        ).toBe(true);
      }
    } finally {
      warned?.mockRestore();
    }
  });
});

describe("a conditional approval of a page tool across a reload", () => {
  it("asks once: the page that resumes gets the same question, and the call runs there once allowed", async () => {
    const first = client();
    const session = await first.agent("support").sessions.create({
      userId: "u_1",
      tools: new Tools().register(payTool("page")),
    });
    const asked = new Promise<string>((resolve) => session.on("approval", (request) => resolve(request.id)));
    void session.responses.create("pay page 700").catch(() => undefined);
    const approvalId = await asked;
    first.close(); // the page reloads while the user thinks

    const second = client();
    const resumed = await second.agent("support").sessions.resume(session.id, {
      tools: new Tools().register(payTool("page")),
    });
    expect(resumed.approvals.map((a) => a.id)).toEqual([approvalId]);
    await resumed.decide(approvalId, { allowed: true });
    await vi.waitFor(
      () => {
        const call = resumed.conversation.find((i) => i.type === "tool_call");
        expect(call?.type === "tool_call" && call.status).toBe("completed");
      },
      { timeout: 10_000 },
    );
    expect(runs.page).toEqual([700]);
    expect(resumed.approvals).toEqual([]);
  });
});
