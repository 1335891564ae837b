import { InMemoryIdempotencyStore, ToolExecutor, Tools } from "@patchbay/tools";
import { describe, expect, it } from "vitest";
import { journaledStore } from "./page-call-journal";

function executor(store: InMemoryIdempotencyStore, runs: string[], finish: Promise<void>) {
  const tools = new Tools().register({
    name: "save_draft",
    description: "Save",
    run: async () => {
      runs.push("run");
      await finish;
      return "saved";
    },
  });
  return new ToolExecutor({
    tools,
    sessionId: "s_1",
    idempotencyStore: journaledStore(store, "s_1", () => "save_draft"),
  });
}

describe("journaledStore", () => {
  it("answers a call an earlier page was still running as page_reloaded instead of running it", async () => {
    const shared = new InMemoryIdempotencyStore();
    const runs: string[] = [];
    const first = executor(shared, runs, new Promise(() => {}));
    void first.execute({ id: "c_1", name: "save_draft", arguments: {} });
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(runs).toEqual(["run"]);
    // The page reloads: a new executor over the same store gets the call again.
    const second = executor(shared, runs, Promise.resolve());
    const again = await second.execute({ id: "c_1", name: "save_draft", arguments: {} }, { attempt: 2 });
    expect(runs).toEqual(["run"]);
    expect(again).toMatchObject({ outcome: "failed", error: { code: "page_reloaded" }, attempt: 2 });
    expect(again.content.text).toMatch(/"save_draft" was running when the user's page reloaded/);
  });

  it("answers a finished call with its result, and runs a new call once", async () => {
    const shared = new InMemoryIdempotencyStore();
    const runs: string[] = [];
    const first = executor(shared, runs, Promise.resolve());
    expect(await first.execute({ id: "c_1", name: "save_draft", arguments: {} })).toMatchObject({
      outcome: "completed",
    });
    const second = executor(shared, runs, Promise.resolve());
    expect(
      await second.execute({ id: "c_1", name: "save_draft", arguments: {} }, { attempt: 2 }),
    ).toMatchObject({
      outcome: "completed",
      content: { text: "saved" },
    });
    expect(runs).toEqual(["run"]);
  });
});
