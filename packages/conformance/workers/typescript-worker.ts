// The conformance worker of @patchbay/dispatch: hosts the kit's tools (packages/conformance/README.md)
// and handles messages and calls as the kit expects. Configured by PATCHBAY_URL, PATCHBAY_API_KEY,
// PATCHBAY_API_SECRET, PATCHBAY_WORKER_ID and PATCHBAY_CAPACITY; SIGTERM drains it.
import { Client } from "@patchbay/client";
import { Dispatch } from "@patchbay/dispatch";
import { ToolOutput } from "@patchbay/tools";

const workerId = process.env.PATCHBAY_WORKER_ID ?? "conformance-ts";
const url = process.env.PATCHBAY_URL!;
const client = new Client({
  baseUrl: url,
  apiKey: process.env.PATCHBAY_API_KEY,
  secret: process.env.PATCHBAY_API_SECRET,
});
const dispatch = new Dispatch({
  capacity: Number(process.env.PATCHBAY_CAPACITY ?? 4),
  workerId,
  url,
  backoff: { initialDelayMs: 100, maxDelayMs: 1_000 },
});

/** A 1x1 PNG. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==",
  "base64",
);

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });

const runs = new Map<string, number>();
const msParameters = {
  type: "object",
  properties: { ms: { type: "integer", minimum: 0 } },
  required: ["ms"],
} as const;

const agent = client.agent("conformance");
agent.tools
  .register<{ text: string }>({
    name: "echo",
    description: "Echo the text",
    parameters: { type: "object", properties: { text: { type: "string" } }, required: ["text"] },
    run: ({ text }) => `echo:${text}`,
  })
  .register({
    name: "describe_call",
    description: "Describe the call",
    run: (_args, _signal, ctx) =>
      JSON.stringify({
        callId: ctx.id,
        attempt: ctx.attempt,
        sessionId: ctx.sessionId,
        userId: ctx.user.id,
        workerId,
      }),
  })
  .register<{ n: number }>({
    name: "recall",
    description: "What the conversation holds",
    parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"] },
    run: (_args, _signal, ctx) =>
      JSON.stringify(
        ctx.conversation.map((item) => [item.id, item.type === "message" ? item.text : item.status]),
      ),
  })
  .register<{ steps: number }>({
    name: "report",
    description: "Report progress",
    parameters: {
      type: "object",
      properties: { steps: { type: "integer", minimum: 1, maximum: 10 } },
      required: ["steps"],
    },
    run: async ({ steps }, signal, ctx) => {
      for (let i = 1; i <= steps; i++) {
        ctx.update(`step ${i} of ${steps}`);
        await sleep(50, signal);
      }
      ctx.say("Exactly these words.");
      return `reported ${steps} steps`;
    },
  })
  .register<{ ms: number }>({
    name: "wait",
    description: "Wait",
    parameters: msParameters,
    interruptible: true,
    run: async ({ ms }, signal, ctx) => {
      const n = (runs.get(ctx.id) ?? 0) + 1;
      runs.set(ctx.id, n);
      await sleep(ms, signal);
      return `waited ${ms} ms on ${workerId}, runs=${n}`;
    },
  })
  .register<{ ms: number }>({
    name: "hold_then_wait",
    description: "Hold, then wait",
    parameters: msParameters,
    interruptible: true,
    run: async ({ ms }, _signal, ctx) => {
      const signal = await ctx.disallowInterruptions();
      await sleep(ms, signal);
      return `held and waited ${ms} ms`;
    },
  })
  .register({
    name: "sleepy",
    description: "Sleep past the timeout",
    timeoutMs: 1_000,
    run: async (_args, signal) => {
      await sleep(30_000, signal);
      return "never";
    },
  })
  .register({
    name: "fail",
    description: "Fail",
    run: () => {
      throw new Error("deliberate failure");
    },
  })
  .register<{ amount: number }>({
    name: "pay",
    description: "Pay an amount",
    parameters: { type: "object", properties: { amount: { type: "integer" } }, required: ["amount"] },
    approval: { title: "Pay {amount}?", when: ({ amount }) => amount > 100 },
    run: ({ amount }) => `paid ${amount}`,
  })
  .register({
    name: "image",
    description: "An image",
    run: () => new ToolOutput({ text: "a 1x1 png", images: [{ data: PNG, mimeType: "image/png" }] }),
  });
dispatch.host(agent);

dispatch.onMessage(async (message, { signal }) => {
  if (message.text.startsWith("fail")) throw new Error("deliberate failure");
  const hold = /^hold (\d+)/.exec(message.text);
  if (hold) await sleep(Number(hold[1]), signal);
  if (message.sessionId) await dispatch.answer(message);
});
dispatch.onCall(() => undefined);

process.once("SIGTERM", () => {
  void dispatch.stop({ timeoutMs: 10_000 }).then(({ drained }) => {
    client.close();
    process.exit(drained ? 0 : 1);
  });
});

dispatch.run().catch((error: Error & { code?: string }) => {
  console.error(`${error.code ?? "error"}: ${error.message}`);
  process.exit(1);
});
