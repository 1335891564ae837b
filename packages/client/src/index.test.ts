import * as tools from "@patchbay/tools";
import { describe, expect, it } from "vitest";
import * as node from "./index";
import * as browser from "./index.browser";

describe("CallNotHeld from @patchbay/client", () => {
  it("is the class @patchbay/tools throws, from both entries, so instanceof works on a tool's rejection", () => {
    expect(node.CallNotHeld).toBe(tools.CallNotHeld);
    expect(browser.CallNotHeld).toBe(tools.CallNotHeld);
    const thrown: unknown = new tools.CallNotHeld("call_1", "interrupted");
    expect(thrown).toBeInstanceOf(node.CallNotHeld);
    expect(thrown).toMatchObject({ code: "call_not_held", callId: "call_1" });
  });
});
