import * as tools from "@patchbay/tools";
import { describe, expect, it } from "vitest";
import * as dispatch from "./index";

describe("CallNotHeld from @patchbay/dispatch", () => {
  it("is the class @patchbay/tools throws, so a hosted tool can catch it with instanceof", () => {
    expect(dispatch.CallNotHeld).toBe(tools.CallNotHeld);
    const thrown: unknown = new tools.CallNotHeld("call_1", "timed_out");
    expect(thrown).toBeInstanceOf(dispatch.CallNotHeld);
    expect(thrown).toMatchObject({ code: "call_not_held", callId: "call_1" });
  });
});
