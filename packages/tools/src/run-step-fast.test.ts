import { describe, expect, it } from "vitest";
import { CallState } from "./call-state";
import { type RunHost, runStep } from "./call-step-run";
import { runStepFast } from "./run-step-fast";
import { compileTool } from "./tool-definition";

type Step = (host: RunHost, state: CallState, tool: ReturnType<typeof compileTool>, args: unknown) => unknown;

/**
 * Runs one step on a tool whose `run` is `run`, counting promise jobs from the step's start: which
 * events the host saw, and at which job the call ended.
 */
async function trace(step: Step, run: () => unknown, settleAfterStart = false) {
  const tool = compileTool({ name: "t", description: "T", run });
  const state = new CallState(
    { id: "c1", index: 0, name: "t", arguments: {}, rawArguments: "{}" },
    tool,
    1,
    0,
    ":c1",
  );
  const events: string[] = [];
  let job = 0;
  let endedAt = -1;
  const host = {
    started: () => events.push("started"),
    threw: (_state: CallState, error: unknown) => events.push(`threw:${(error as Error).message}`),
    finish: (s: CallState, outcome: string, ending: { text: string }) => {
      if (s.settled) return;
      s.settled = true;
      endedAt = job;
      events.push(`${outcome}:${ending.text}`);
    },
  } as unknown as RunHost;
  // Bounded: an endless chain of promise jobs would never let the timer below run.
  const count = () => {
    if (job >= 200) return;
    job++;
    Promise.resolve().then(count);
  };
  Promise.resolve().then(count);
  step(host, state, tool, {});
  if (settleAfterStart) host.finish(state, "cancelled", { text: "stopped" } as never);
  await new Promise((resolve) => setTimeout(resolve, 20));
  return { events, endedAt };
}

const thenable = (value: unknown) => ({
  // biome-ignore lint/suspicious/noThenProperty: a thenable that is not a promise is the case under test
  then: (resolve: (v: unknown) => void) => resolve(value),
});

const runs: Record<string, () => unknown> = {
  "a plain value": () => "ok",
  "a promise": () => Promise.resolve("ok"),
  "a promise resolved later": () => new Promise((resolve) => setTimeout(() => resolve("later"), 1)),
  "a thenable that is not a promise": () => thenable("ok"),
  "a synchronous throw": () => {
    throw new Error("boom");
  },
  "a rejected promise": () => Promise.reject(new Error("no")),
  "an output that cannot be shown": () => () => "a function",
  "an image": () => ({ type: "image", mimeType: "image/png", data: "iVBORw0KGgo=" }),
};

describe("runStepFast", () => {
  for (const [what, run] of Object.entries(runs)) {
    it(`ends a call whose run returns ${what} as runStep does, in the same promise job`, async () => {
      const plain = await trace(runStep, run);
      const fast = await trace(runStepFast, run);
      expect(fast.events).toEqual(plain.events);
      expect(fast.events[0]).toBe("started");
      expect(fast.events).toHaveLength(
        what === "a synchronous throw" || what === "a rejected promise" ? 3 : 2,
      );
      if (what !== "a promise resolved later") expect(fast.endedAt).toBe(plain.endedAt);
    });
  }

  it("keeps the ending of a call that ended while its run was under way", async () => {
    for (const run of [() => "ok", () => Promise.reject(new Error("late"))]) {
      const plain = await trace(runStep, run, true);
      const fast = await trace(runStepFast, run, true);
      expect(fast.events).toEqual(["started", "cancelled:stopped"]);
      expect(fast.events).toEqual(plain.events);
    }
  });
});
