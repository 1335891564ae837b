import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import type { ApprovalGate } from "./approval-gate";
import { ToolDefinitionError } from "./errors";
import { PreapprovedToolExecutor } from "./preapproved-tool-executor";
import { call, setup } from "./test-support/executor";
import type { ToolDefinition } from "./tool-definition";
import type { ConditionalApprovalAnswer } from "./tool-executor-options";
import { Tools } from "./tools";

/** A payment that asks only above 100, the threshold read from the parsed arguments. */
function pay(when: NonNullable<ToolDefinition<{ amount: number; currency: string }>["approval"]>["when"]) {
  const run = vi.fn(
    ({ amount, currency }: { amount: number; currency: string }) => `paid ${amount} ${currency}`,
  );
  const definition: ToolDefinition<{ amount: number; currency: string }> = {
    name: "pay",
    description: "Pays an invoice",
    parameters: z.object({ amount: z.number(), currency: z.string().default("EUR") }),
    approval: { title: "Pay {amount}?", ...(when ? { when } : {}) },
    run,
  };
  return { definition, run };
}

describe("approval.when in a ToolExecutor (the gate asks)", () => {
  it("asks the gate when `when` says true and runs without asking when it says false, with parsed arguments", async () => {
    const seen: unknown[] = [];
    const { definition, run } = pay((args, ctx) => {
      seen.push({ args, id: ctx.id, user: ctx.user.id, session: ctx.sessionId });
      return args.amount > 100;
    });
    const gate = vi.fn<ApprovalGate>(async () => "allowed");
    const { executor } = setup([definition], { approvalGate: gate });
    const small = await executor.execute(call("c_small", "pay", { amount: 20 }));
    expect(small).toMatchObject({ outcome: "completed", content: { text: "paid 20 EUR" } });
    expect(gate).not.toHaveBeenCalled();
    const big = await executor.execute(call("c_big", "pay", { amount: 500 }));
    expect(big.outcome).toBe("completed");
    expect(gate).toHaveBeenCalledTimes(1);
    expect(gate.mock.calls[0]![0]).toMatchObject({ callId: "c_big", title: "Pay 500?" });
    expect(run).toHaveBeenCalledTimes(2);
    // The default from the schema is there: `when` sees what `run` sees.
    expect(seen[0]).toEqual({
      args: { amount: 20, currency: "EUR" },
      id: "c_small",
      user: "u_1",
      session: "s_1",
    });
  });

  it("awaits an async `when`, and a declined question keeps the tool from running", async () => {
    const { definition, run } = pay(async ({ amount }) => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      return amount > 100;
    });
    const { executor } = setup([definition], { approvalGate: async () => "declined" });
    expect((await executor.execute(call("c1", "pay", { amount: 500 }))).outcome).toBe("declined");
    expect((await executor.execute(call("c2", "pay", { amount: 5 }))).outcome).toBe("completed");
    expect(run).toHaveBeenCalledTimes(1);
  });

  it("fails the call when `when` throws: a short sentence for the model, the error on `threw`", async () => {
    const boom = new Error("credit service down at 10.0.0.7");
    const { definition, run } = pay(() => {
      throw boom;
    });
    const gate = vi.fn<ApprovalGate>(async () => "allowed");
    const { executor } = setup([definition], { approvalGate: gate });
    const threw = vi.fn();
    executor.on("threw", threw);
    const result = await executor.execute(call("c1", "pay", { amount: 5 }));
    expect(result).toMatchObject({
      outcome: "failed",
      error: {
        code: "approval_check_failed",
        message: "credit service down at 10.0.0.7",
      },
    });
    expect(result.content.text).toBe('"pay" did not run: whether to ask the user could not be decided.');
    expect(result.content.text).not.toContain("10.0.0.7");
    expect(threw).toHaveBeenCalledWith(
      expect.objectContaining({ callId: "c1", name: "pay", error: boom, step: "when" }),
    );
    expect(gate).not.toHaveBeenCalled();
    expect(run).not.toHaveBeenCalled();
  });
});

describe("approval.when in a PreapprovedToolExecutor (the host asks upstream)", () => {
  function preapproved(
    definition: ToolDefinition<any>,
    confirmApproval?: (r: { callId: string; attempt: number }) => Promise<ConditionalApprovalAnswer>,
  ) {
    return new PreapprovedToolExecutor({
      tools: new Tools([definition]),
      sessionId: "s_1",
      user: { id: "u_1" },
      ...(confirmApproval ? { confirmApproval } : {}),
    });
  }

  it("asks confirmApproval only for calls `when` says yes to, and maps each outcome", async () => {
    const { definition, run } = pay(({ amount }) => amount > 100);
    const answers: ConditionalApprovalAnswer[] = [
      { outcome: "allowed" },
      { outcome: "declined", reason: "too much" },
      { outcome: "expired" },
      { outcome: "cancelled", reason: "stale_attempt" },
    ];
    const confirm = vi.fn(async (_request: { callId: string; attempt: number }) => answers.shift()!);
    const executor = preapproved(definition, confirm);
    expect((await executor.execute(call("c0", "pay", { amount: 1 }), { attempt: 1 })).outcome).toBe(
      "completed",
    );
    expect(confirm).not.toHaveBeenCalled();
    expect((await executor.execute(call("c1", "pay", { amount: 200 }), { attempt: 2 })).outcome).toBe(
      "completed",
    );
    expect(confirm.mock.calls[0]![0]).toMatchObject({ callId: "c1", name: "pay", attempt: 2 });
    const declined = await executor.execute(call("c2", "pay", { amount: 200 }));
    expect(declined).toMatchObject({ outcome: "declined", error: { code: "declined" } });
    expect(declined.content.text).toBe('"pay" did not run: its approval ended declined.');
    expect((await executor.execute(call("c3", "pay", { amount: 200 }))).outcome).toBe("approval_expired");
    expect((await executor.execute(call("c4", "pay", { amount: 200 }))).outcome).toBe("cancelled");
    expect(run).toHaveBeenCalledTimes(2);
  });

  it("runs a tool with an unconditional approval without asking (it was asked upstream)", async () => {
    const { definition, run } = pay(undefined);
    const confirm = vi.fn(async (): Promise<ConditionalApprovalAnswer> => ({ outcome: "declined" }));
    expect((await preapproved(definition, confirm).execute(call("c1", "pay", { amount: 500 }))).outcome).toBe(
      "completed",
    );
    expect(confirm).not.toHaveBeenCalled();
    expect(run).toHaveBeenCalledTimes(1);
  });

  it("declines a call that must ask when there is no one to ask (no confirmApproval)", async () => {
    const { definition, run } = pay(() => true);
    const result = await preapproved(definition).execute(call("c1", "pay", { amount: 5 }));
    expect(result).toMatchObject({ outcome: "declined", error: { code: "approval_unavailable" } });
    expect(run).not.toHaveBeenCalled();
  });

  it("ends a call cancelled while its question waits, without running it", async () => {
    const { definition, run } = pay(() => true);
    const executor = preapproved(definition, () => new Promise(() => {}));
    const pending = executor.execute(call("c1", "pay", { amount: 5 }));
    await new Promise((resolve) => setTimeout(resolve, 5));
    expect(executor.cancel("c1", "cancelled")).toBe(true);
    expect((await pending).outcome).toBe("cancelled");
    expect(run).not.toHaveBeenCalled();
  });
});

describe("approval.when in the tool's spec", () => {
  it("marks the spec conditional (the function stays here) and refuses a `when` that is not a function", () => {
    const { definition } = pay(() => true);
    const spec = new Tools([definition]).list()[0]!;
    expect(spec.approval).toEqual({ title: "Pay {amount}?", conditional: true });
    expect(new Tools([pay(undefined).definition]).list()[0]!.approval).toEqual({ title: "Pay {amount}?" });
    // `conditional` written by hand without a function is not trusted.
    const forged = { ...pay(undefined).definition, approval: { title: "Pay?", conditional: true } };
    expect(new Tools([forged as ToolDefinition<any>]).list()[0]!.approval).toEqual({ title: "Pay?" });
    const bad = { ...pay(undefined).definition, approval: { title: "Pay?", when: "always" } };
    expect(() => new Tools([bad as unknown as ToolDefinition<any>])).toThrow(ToolDefinitionError);
    expect(() => new Tools([bad as unknown as ToolDefinition<any>])).toThrow(/approval\.when/);
  });
});
