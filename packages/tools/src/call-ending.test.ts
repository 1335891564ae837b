import { describe, expect, it } from "vitest";
import { failureOf, resultOf } from "./call-ending";
import { CallState } from "./call-state";
import { ToolError, ToolOutputError } from "./errors";
import { ModelSentences } from "./model-sentences";

const call = { id: "c1", index: 0, name: "book", arguments: {}, rawArguments: "{}" };

describe("failureOf", () => {
  it("passes a ToolError's own message and code to the model", () => {
    expect(failureOf("book", new ToolError("The flight is sold out.", { code: "sold_out" }))).toEqual({
      text: "The flight is sold out.",
      code: "sold_out",
      message: "The flight is sold out.",
    });
  });

  it("explains unusable output in the model's sentence", () => {
    const ending = failureOf("book", new ToolOutputError("a function is not JSON"));
    expect(ending.text).toBe(ModelSentences.unusableOutput("book", "a function is not JSON"));
  });

  it("keeps a thrown error's string code, tool_error otherwise", () => {
    const coded = Object.assign(new Error("refused"), { code: "ECONNREFUSED" });
    expect(failureOf("book", coded).code).toBe("ECONNREFUSED");
    expect(failureOf("book", Object.assign(new Error("x"), { code: 7 })).code).toBe("tool_error");
    expect(failureOf("book", "plain")).toEqual({
      text: ModelSentences.failed("book", "plain"),
      code: "tool_error",
      message: "plain",
    });
  });
});

describe("resultOf", () => {
  it("builds the result from the call's state, with the value only when completed", () => {
    const state = new CallState(call, undefined, 2, 1_000, "s:c1");
    state.held = true;
    const content = { text: "ok", images: [] };
    expect(resultOf(state, "completed", { text: "ok", content, value: { id: 1 } }, 1_250)).toEqual({
      callId: "c1",
      name: "book",
      outcome: "completed",
      content,
      held: true,
      attempt: 2,
      durationMs: 250,
      value: { id: 1 },
    });
    const failed = resultOf(state, "failed", { text: "t", code: "x", value: 1 }, 900);
    expect(failed.value).toBeUndefined();
    expect(failed.error).toEqual({ code: "x", message: "t" });
    expect(failed.durationMs).toBe(0);
  });
});
